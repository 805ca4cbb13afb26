// Package procstat reads a process's footprint from Linux's /proc file
// system: resident memory, open file descriptors, memory maps and CPU
// time. On other systems every function returns an error wrapping
// fs.ErrNotExist. The functions are safe for concurrent use.
package procstat

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
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

// CPUTime returns the CPU time, user and system, that process pid (0: this
// process) has used, from /proc/<pid>/stat, in steps of 10 ms.
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(dir(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("procstat: %w", err)
	}
	return ParseStatCPU(b)
}

// userHZ is the unit of /proc's CPU times: 100 ticks a second on every
// Linux architecture (USER_HZ), whatever the kernel's own HZ.
const userHZ = 100

// ParseStatCPU returns utime + stime of a /proc/<pid>/stat line. The
// command name, field 2, may hold spaces and parentheses, so fields are
// counted from the last ')'.
func ParseStatCPU(stat []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("procstat: malformed stat line %q", stat)
	}
	fields := bytes.Fields(stat[i+1:])
	// fields[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(fields) < 13 {
		return 0, fmt.Errorf("procstat: malformed stat line %q", stat)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("procstat: malformed stat line %q", stat)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
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
	return ParseKB(status, "VmRSS", "status")
}

// ParseKB returns in bytes the value of the first "key: N kB" line of a
// /proc file such as /proc/<pid>/status or /proc/meminfo; N is a
// non-negative int64 (strconv.ParseInt's syntax). file names the file in
// the error when no line has the key ("status", "meminfo").
func ParseKB(data []byte, key, file string) (int64, error) {
	prefix := []byte(key + ":")
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), prefix)
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, fmt.Errorf("procstat: malformed %s line %q", key, sc.Text())
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || kb < 0 {
			return 0, fmt.Errorf("procstat: malformed %s line %q", key, sc.Text())
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("procstat: no %s line in the %s file", key, file)
}
