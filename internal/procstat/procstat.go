// Package procstat reads a process's footprint from Linux's /proc file
// system: resident memory, open file descriptors and memory maps. On other
// systems every function returns an error wrapping fs.ErrNotExist. The
// functions are safe for concurrent use.
package procstat

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// dir returns the /proc directory of pid; 0 is the calling process.
func dir(pid int) string {
	if pid == 0 {
		return "/proc/self"
	}
	return "/proc/" + strconv.Itoa(pid)
}

// RSS returns the resident set size of process pid (0: this process) in
// bytes, from the VmRSS line of /proc/<pid>/status.
func RSS(pid int) (int64, error) {
	b, err := os.ReadFile(dir(pid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("procstat: %w", err)
	}
	return ParseVmRSS(b)
}

// OpenFDs returns the number of open file descriptors of process pid (0:
// this process, not counting the one used to list them).
func OpenFDs(pid int) (int, error) {
	ents, err := os.ReadDir(dir(pid) + "/fd")
	if err != nil {
		return 0, fmt.Errorf("procstat: %w", err)
	}
	n := len(ents)
	if pid == 0 {
		n-- // the descriptor that read the directory
	}
	return n, nil
}

// Maps returns the number of memory maps of process pid (0: this process),
// the lines of /proc/<pid>/maps; vm.max_map_count caps it.
func Maps(pid int) (int, error) {
	b, err := os.ReadFile(dir(pid) + "/maps")
	if err != nil {
		return 0, fmt.Errorf("procstat: %w", err)
	}
	return bytes.Count(b, []byte{'\n'}), nil
}

// ParseVmRSS returns the VmRSS of a /proc/<pid>/status file in bytes.
func ParseVmRSS(status []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmRSS:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, fmt.Errorf("procstat: malformed VmRSS line %q", sc.Text())
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || kb < 0 {
			return 0, fmt.Errorf("procstat: malformed VmRSS line %q", sc.Text())
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("procstat: no VmRSS line in the status file")
}
