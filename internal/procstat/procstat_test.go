package procstat_test

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/seahaven/seahaven/internal/procstat"
)

func TestParseVmRSS(t *testing.T) {
	tests := []struct {
		name   string // what the status text shows
		status string // the /proc/<pid>/status text
		want   int64  // the bytes, when no error
		errMsg string // a substring of the error, "" for none
	}{
		{"OK", "Name:\tx\nVmPeak:\t  10 kB\nVmRSS:\t    2048 kB\nThreads: 3\n", 2048 << 10, ""},
		{"Zero", "VmRSS:\t0 kB\n", 0, ""},
		{"Missing", "Name:\tx\n", 0, "no VmRSS line"},
		{"NoUnit", "VmRSS:\t2048\n", 0, "malformed VmRSS line"},
		{"OtherUnit", "VmRSS:\t2 MB\n", 0, "malformed VmRSS line"},
		{"NotANumber", "VmRSS:\tlots kB\n", 0, "malformed VmRSS line"},
		{"Negative", "VmRSS:\t-4 kB\n", 0, "malformed VmRSS line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := procstat.ParseVmRSS([]byte(tt.status))
			if tt.errMsg != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errMsg) {
					t.Fatalf("err = %v, want one containing %q", err, tt.errMsg)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseVmRSS = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func TestParseKB(t *testing.T) {
	meminfo := "MemTotal:       24576000 kB\nMemFree:  100 kB\n"
	if got, err := procstat.ParseKB([]byte(meminfo), "MemFree", "meminfo"); err != nil || got != 100<<10 {
		t.Errorf("ParseKB(MemFree) = %d, %v; want %d", got, err, 100<<10)
	}
	if got, err := procstat.ParseKB([]byte(meminfo), "MemTotal", "meminfo"); err != nil || got != 24576000<<10 {
		t.Errorf("ParseKB(MemTotal) = %d, %v; want %d", got, err, 24576000<<10)
	}
	// The key is a whole name: "Mem" matches no line.
	if _, err := procstat.ParseKB([]byte(meminfo), "Mem", "meminfo"); err == nil || err.Error() != "procstat: no Mem line in the meminfo file" {
		t.Errorf("ParseKB(Mem): err = %v", err)
	}
	if _, err := procstat.ParseKB([]byte("MemTotal: 3 GB\n"), "MemTotal", "meminfo"); err == nil || err.Error() != `procstat: malformed MemTotal line "MemTotal: 3 GB"` {
		t.Errorf("ParseKB(MemTotal in GB): err = %v", err)
	}
}

func TestParseStatCPU(t *testing.T) {
	line := []byte("4242 (a (b) c) S 1 4242 4242 0 -1 4194560 1000 0 0 0 150 25 0 0 20 0 9 0 123 456 789\n")
	if d, err := procstat.ParseStatCPU(line); err != nil || d != 1750*time.Millisecond {
		t.Errorf("ParseStatCPU = %v, %v; want 1.75s (150 + 25 ticks)", d, err)
	}
	for _, bad := range []string{"", "4242 (x S 1", "4242 (x) S 1 2 3", "4242 (x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 1.5 25 0"} {
		if _, err := procstat.ParseStatCPU([]byte(bad)); err == nil {
			t.Errorf("ParseStatCPU(%q) succeeded", bad)
		}
	}
}

func TestSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	rss, err := procstat.RSS(0)
	if err != nil || rss <= 0 {
		t.Errorf("RSS(0) = %d, %v", rss, err)
	}
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
	}
	if cpu, err := procstat.CPUTime(0); err != nil || cpu <= 0 {
		t.Errorf("CPUTime(0) = %v, %v after 50 ms of spinning", cpu, err)
	}
	before, err := procstat.OpenFDs(0)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	after, err := procstat.OpenFDs(0)
	f.Close()
	if err != nil || after != before+1 {
		t.Errorf("OpenFDs(0) with one more file open = %d, %v; want %d", after, err, before+1)
	}
	byPID, err := procstat.OpenFDs(os.Getpid())
	if err != nil || byPID != before+1 { // listing by pid counts the listing's own descriptor
		t.Errorf("OpenFDs(own pid) = %d, %v; want %d", byPID, err, before+1)
	}
	if n, err := procstat.Maps(0); err != nil || n <= 0 {
		t.Errorf("Maps(0) = %d, %v", n, err)
	}
	if _, err := procstat.RSS(1 << 30); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("RSS of a missing process: err = %v, want fs.ErrNotExist", err)
	}
}
