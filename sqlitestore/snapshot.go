package sqlitestore

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// RandomState returns where the store's random() and randomblob() stream
// stands, for Options.RandomState.
func (s *Store) RandomState() []byte { return s.AppendRandomState(nil) }

// AppendRandomState appends where the store's random() and randomblob()
// stream stands, as RandomState returns it, to b.
func (s *Store) AppendRandomState(b []byte) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ = s.rng.AppendBinary(b) // a PCG's never fails
	return b
}

// SetRandomState moves the store's random() and randomblob() stream to
// where RandomState said it stood, as when a call that drew from it is
// taken back.
func (s *Store) SetRandomState(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.rng.UnmarshalBinary(b); err != nil {
		return fmt.Errorf("sqlitestore: SetRandomState: %w", err)
	}
	return nil
}

// Snapshot returns the store file's content as it stands between
// transactions: every committed write, byte for byte, so that a store
// opened on a copy (Options.Data) goes on exactly as this one would. It
// fails inside a transaction. The bytes are the caller's, except for a
// store that has not written its Options.Data yet, whose Data they are:
// do not modify them.
func (s *Store) Snapshot(ctx context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, ErrClosed
	case s.inTxnLocked():
		return nil, errors.New("sqlitestore: Snapshot inside a transaction: the file does not hold its writes yet")
	case ctx.Err() != nil:
		return nil, contextError(ctx)
	case s.data != nil:
		return s.data, nil
	}
	b, err := os.ReadFile(s.path)
	if err != nil {
		return nil, &opError{"snapshot", s.path, err}
	}
	return b, nil
}

// SchemaHash returns the normalised schema hash of the live file, computed as
// the package function SchemaHash computes it for a schema.
func (s *Store) SchemaHash(ctx context.Context) (string, error) {
	var h string
	err := s.do(ctx, true, func(cn *conn) error {
		var err error
		h, err = hashSchema(cn)
		return err
	})
	return h, err
}

// VacuumInto writes a compact copy of the store to dst, a new file, and
// fsyncs it and its directory. It fails with an error wrapping fs.ErrExist
// when dst exists, and inside a transaction.
func (s *Store) VacuumInto(ctx context.Context, dst string) error {
	if !filepath.IsAbs(dst) {
		return fmt.Errorf("sqlitestore: VacuumInto needs an absolute path, got %q", dst)
	}
	if _, err := os.Lstat(dst); err == nil {
		return &opError{"vacuum into", dst, fs.ErrExist}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return &opError{"vacuum into", dst, err}
	}
	err := s.do(ctx, true, func(cn *conn) error {
		st, _, err := cn.c.Prepare("VACUUM INTO ?")
		if err != nil {
			return err
		}
		defer st.Close()
		if err := st.BindText(1, dst); err != nil {
			return err
		}
		return st.Exec()
	})
	if err == nil {
		err = syncFile(dst)
	}
	if err != nil {
		err = fullError(err, filepath.Dir(dst)) // before the partial copy is removed
		os.Remove(dst)
		return &opError{"vacuum into", dst, err}
	}
	return nil
}

// syncFile fsyncs a file and the directory that holds it.
func syncFile(path string) error {
	for _, p := range []string{path, filepath.Dir(path)} {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		if err := cmp.Or(f.Sync(), f.Close()); err != nil {
			return err
		}
	}
	return nil
}

// ContentDigest returns the hex SHA-256 of a store file's bytes with
// SQLite's two change counters (header bytes 24–27 and 92–95) zeroed. The
// counters record how often connections took the file's lock to write,
// which depends on when connections were released, parked or reopened
// (see Pool), not on what the file holds: two files with the same pages
// have the same digest. A checkpointed episode's restored files and the
// uninterrupted episode's files have the same digests after the same
// calls.
func ContentDigest(file []byte) string {
	h := sha256.New()
	if len(file) < 100 {
		h.Write(file)
	} else {
		var zero [4]byte
		h.Write(file[:24])
		h.Write(zero[:])
		h.Write(file[28:92])
		h.Write(zero[:])
		h.Write(file[96:])
	}
	return hex.EncodeToString(h.Sum(nil))
}
