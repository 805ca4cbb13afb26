//go:build linux

package sqlitestore

import (
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/vfs"
	"golang.org/x/sys/unix"
)

// rebindSupported reports whether connections can be parked and rebound
// (see Options.ShareKey).
const rebindSupported = true

// rebindVFSName is the VFS through which parkable connections open their
// main database file.
const rebindVFSName = "seahaven-rebind"

// The VFS serves main database files named /seahaven-rebind/N, each the slot
// of one connection: a slot is a file handle whose underlying file can be
// swapped (rebound) while the connection holds no lock on it. Locks use the
// byte ranges of SQLite's unix VFS as open file description locks, as the
// driver's own VFS does on Linux, so a connection of either VFS (an
// Inspector) reads and writes the same files safely beside the other.
var (
	rebindOnce  sync.Once
	rebindSlots sync.Map // slot name -> *rebindFile
	rebindSeq   atomic.Uint64
)

// SQLite's lock bytes (os.c): one PENDING byte, one RESERVED byte, then the
// SHARED range.
const (
	pendingByte  = 0x40000000
	reservedByte = pendingByte + 1
	sharedFirst  = pendingByte + 2
	sharedSize   = 510
)

type rebindVFS struct{}

// newSlot registers a slot bound to path and returns it with the URI that
// opens a connection on it.
func newSlot(path string) (*rebindFile, string, error) {
	rebindOnce.Do(func() { vfs.Register(rebindVFSName, rebindVFS{}) })
	f := &rebindFile{name: slotPrefix + strconv.FormatUint(rebindSeq.Add(1), 10), fd: -1}
	if err := f.bind(path); err != nil {
		return nil, "", err
	}
	rebindSlots.Store(f.name, f)
	return f, "file:" + f.name + "?vfs=" + rebindVFSName, nil
}

// Open is never called: the driver calls OpenFilename.
func (v rebindVFS) Open(name string, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	return nil, flags, sqlite3.CANTOPEN
}

// OpenFilename opens a slot's main database file. Every other file goes to
// the driver's own VFS: temporary files, and the targets of VACUUM INTO and
// ATTACH. A slot's journal is refused: parkable connections keep their
// journal in memory.
func (rebindVFS) OpenFilename(name *vfs.Filename, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	if name == nil || !isSlotName(name.String()) {
		return vfs.Find("os").(vfs.VFSFilename).OpenFilename(name, flags)
	}
	v, ok := rebindSlots.Load(name.String())
	if !ok || flags&vfs.OPEN_MAIN_DB == 0 {
		return nil, flags, sqlite3.CANTOPEN
	}
	f := v.(*rebindFile)
	if f.opened {
		return nil, flags, sqlite3.CANTOPEN // one connection per slot
	}
	f.opened = true
	return f, flags, nil
}

// isSlotName reports whether name is a slot's (or derived from one, as a
// journal's name is).
func isSlotName(name string) bool { return strings.HasPrefix(name, slotPrefix) }

// slotPrefix starts every slot name.
const slotPrefix = "/" + rebindVFSName + "/"

// Delete deletes files of the driver's VFS; nothing of a slot is ever
// deleted.
func (rebindVFS) Delete(name string, syncDir bool) error {
	if isSlotName(name) {
		return sqlite3.IOERR_DELETE
	}
	return vfs.Find("os").Delete(name, syncDir)
}

// Access reports that no journal or WAL file exists next to a slot, and
// asks the driver's VFS about other files.
func (rebindVFS) Access(name string, flags vfs.AccessFlag) (bool, error) {
	if isSlotName(name) {
		return false, nil
	}
	return vfs.Find("os").Access(name, flags)
}

// FullPathname keeps slot names as they are and asks the driver's VFS about
// other names.
func (rebindVFS) FullPathname(name string) (string, error) {
	if isSlotName(name) {
		return name, nil
	}
	return vfs.Find("os").FullPathname(name)
}

// rebindFile is a slot: the main database file of one connection. Its file
// is swapped only by its connection's owner while the connection runs no
// statement, so its methods need no lock of their own. The descriptor is not
// an os.File, so nothing closes it behind the slot's back; closing it also
// drops the open file description's locks.
type rebindFile struct {
	name   string
	opened bool // the connection opened it
	fd     int  // the bound file's descriptor; -1 while unbound
	lock   vfs.LockLevel
	fmap   fileMap // the bound file mapped, once it is used enough
}

var (
	_ vfs.FileLockState = (*rebindFile)(nil)
	_ vfs.FileSizeHint  = (*rebindFile)(nil)
)

// errUnbound is what an access to an unbound slot fails with; SQLite reports
// it as an I/O error. It means a bug in this package.
var errUnbound = errors.New("sqlitestore: connection file is not bound")

// bind points the slot at the file at path. The file is used through its
// descriptor, without an os.File: a rebind then costs one open and one close
// system call.
func (r *rebindFile) bind(path string) error {
	if r.fd >= 0 {
		return errors.New("sqlitestore: connection file is already bound")
	}
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Open(path, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	r.fd, r.lock = fd, vfs.LOCK_NONE
	r.fmap.reset()
	return nil
}

// retry calls fn again while it fails with EINTR, and returns its result.
func retry(fn func() error) error {
	for {
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}

// unbind closes the bound file. It fails, binding nothing away, while the
// connection holds a lock on it.
func (r *rebindFile) unbind() error {
	if r.fd < 0 {
		return nil
	}
	if r.lock != vfs.LOCK_NONE {
		return errors.New("sqlitestore: connection still holds its file's lock")
	}
	r.fmap.unmap()
	err := unix.Close(r.fd)
	r.fd = -1
	return err
}

// Close is the connection's close: it unbinds (releasing any lock) and
// retires the slot.
func (r *rebindFile) Close() error {
	rebindSlots.Delete(r.name)
	r.lock = vfs.LOCK_NONE // closing the file description drops its locks
	return r.unbind()
}

// ReadAt reads len(p) bytes at off; a read past the end returns io.EOF with
// what was read, which SQLite takes as a short read.
func (r *rebindFile) ReadAt(p []byte, off int64) (int, error) {
	if r.fd < 0 {
		return 0, errUnbound
	}
	if w := r.fmap.window(r.fd, off, len(p)); w != nil {
		if err := r.fmap.copy(p, w); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return ioAt(unix.Pread, r.fd, p, off, io.EOF)
}

func (r *rebindFile) WriteAt(p []byte, off int64) (int, error) {
	if r.fd < 0 {
		return 0, errUnbound
	}
	if w := r.fmap.window(r.fd, off, len(p)); w != nil {
		if err := r.fmap.copy(w, p); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	n, err := ioAt(unix.Pwrite, r.fd, p, off, io.ErrShortWrite)
	if err == nil {
		r.fmap.wrote(off + int64(n))
	}
	return n, err
}

// ioAt calls op, unix.Pread or unix.Pwrite, until it has moved len(p)
// bytes at off; a call that moves none and reports nothing ends it with
// short, so that it never spins.
func ioAt(op func(int, []byte, int64) (int, error), fd int, p []byte, off int64, short error) (int, error) {
	n := 0
	for n < len(p) {
		m, err := op(fd, p[n:], off+int64(n))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return n, err
		case m == 0:
			return n, short
		}
		n += m
	}
	return n, nil
}

func (r *rebindFile) Truncate(size int64) error {
	if r.fd < 0 {
		return errUnbound
	}
	err := retry(func() error { return unix.Ftruncate(r.fd, size) })
	r.fmap.truncated(size, err)
	return err
}

func (r *rebindFile) Sync(vfs.SyncFlag) error {
	if r.fd < 0 {
		return errUnbound
	}
	return retry(func() error { return unix.Fdatasync(r.fd) })
}

func (r *rebindFile) Size() (int64, error) {
	if r.fd < 0 {
		return 0, errUnbound
	}
	var st unix.Stat_t
	if err := retry(func() error { return unix.Fstat(r.fd, &st) }); err != nil {
		return 0, err
	}
	return st.Size, nil
}

// SizeHint does nothing: instance files grow page by page.
func (r *rebindFile) SizeHint(int64) error { return nil }

func (r *rebindFile) SectorSize() int { return 4096 }

func (r *rebindFile) DeviceCharacteristics() vfs.DeviceCharacteristic {
	return vfs.IOCAP_SUBPAGE_READ | vfs.IOCAP_POWERSAFE_OVERWRITE
}

func (r *rebindFile) LockState() vfs.LockLevel { return r.lock }

// locked reports whether the connection holds any lock on the bound file.
func (r *rebindFile) locked() bool { return r.lock != vfs.LOCK_NONE }

// cookie reads the schema cookie from the bound file's header.
func (r *rebindFile) cookie() (int64, error) {
	var b [4]byte
	if n, err := r.ReadAt(b[:], cookieOffset); n < len(b) {
		if err == nil || err == io.EOF {
			err = errors.New("sqlitestore: database header is cut short")
		}
		return 0, err
	}
	return headerCookie(b[:]), nil
}

// Lock takes SQLite's locks in the unix VFS's order: SHARED from none,
// RESERVED from SHARED, EXCLUSIVE through PENDING.
func (r *rebindFile) Lock(lock vfs.LockLevel) error {
	if r.fd < 0 {
		return sqlite3.IOERR_LOCK
	}
	if r.lock >= lock {
		return nil
	}
	switch lock {
	case vfs.LOCK_SHARED:
		// A writer waiting for EXCLUSIVE holds PENDING: new readers wait.
		if t, err := r.test(pendingByte, 1); err != nil {
			return err
		} else if t == unix.F_WRLCK {
			return sqlite3.BUSY
		}
		if err := r.fcntl(unix.F_RDLCK, sharedFirst, sharedSize, false, sqlite3.IOERR_RDLOCK); err != nil {
			return err
		}
	case vfs.LOCK_RESERVED:
		if err := r.fcntl(unix.F_WRLCK, reservedByte, 1, false, sqlite3.IOERR_LOCK); err != nil {
			return err
		}
	case vfs.LOCK_EXCLUSIVE:
		if r.lock == vfs.LOCK_RESERVED {
			if err := r.fcntl(unix.F_WRLCK, pendingByte, 1, true, sqlite3.IOERR_LOCK); err != nil {
				return err
			}
			r.lock = vfs.LOCK_PENDING
		}
		if err := r.fcntl(unix.F_WRLCK, sharedFirst, sharedSize, false, sqlite3.IOERR_LOCK); err != nil {
			return err
		}
	default:
		return sqlite3.IOERR_LOCK
	}
	r.lock = lock
	return nil
}

// Unlock drops to SHARED (releasing PENDING and RESERVED) or to none.
func (r *rebindFile) Unlock(lock vfs.LockLevel) error {
	if r.fd < 0 || r.lock <= lock {
		return nil
	}
	var err error
	switch lock {
	case vfs.LOCK_SHARED:
		if r.lock >= vfs.LOCK_EXCLUSIVE {
			if err := r.fcntl(unix.F_RDLCK, sharedFirst, sharedSize, false, sqlite3.IOERR_RDLOCK); err != nil {
				return err
			}
		}
		err = r.fcntl(unix.F_UNLCK, pendingByte, 2, false, sqlite3.IOERR_UNLOCK)
	default:
		err = r.fcntl(unix.F_UNLCK, 0, 0, false, sqlite3.IOERR_UNLOCK)
	}
	r.lock = lock
	return err
}

func (r *rebindFile) CheckReservedLock() (bool, error) {
	if r.lock >= vfs.LOCK_RESERVED {
		return true, nil
	}
	if r.fd < 0 {
		return false, sqlite3.IOERR_CHECKRESERVEDLOCK
	}
	t, err := r.test(reservedByte, 1)
	return t == unix.F_WRLCK, err
}

// fcntl sets (or with wait, waits for) an open file description lock.
// Contention is SQLITE_BUSY; any other failure is def.
func (r *rebindFile) fcntl(typ int16, start, n int64, wait bool, def sqlite3.ExtendedErrorCode) error {
	lk := unix.Flock_t{Type: typ, Start: start, Len: n}
	cmd := unix.F_OFD_SETLK
	if wait {
		cmd = unix.F_OFD_SETLKW
	}
	err := retry(func() error { return unix.FcntlFlock(uintptr(r.fd), cmd, &lk) })
	switch err {
	case nil:
		return nil
	case unix.EAGAIN, unix.EACCES, unix.EBUSY, unix.ENOLCK, unix.EDEADLK, unix.ETIMEDOUT:
		if typ != unix.F_UNLCK {
			return sqlite3.BUSY
		}
	}
	return vfs.SystemError(err, def)
}

// test returns the type of a lock another file description holds on the
// range (F_UNLCK when none).
func (r *rebindFile) test(start, n int64) (int16, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Start: start, Len: n}
	if err := retry(func() error { return unix.FcntlFlock(uintptr(r.fd), unix.F_OFD_GETLK, &lk) }); err != nil {
		return 0, vfs.SystemError(err, sqlite3.IOERR_LOCK)
	}
	return lk.Type, nil
}
