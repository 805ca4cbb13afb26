package bench_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/internal/bench"
)

func TestRawFloor(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		dir := t.TempDir()
		f, err := bench.RawFloor(dir)
		if err != nil {
			t.Fatal(err)
		}
		if f.Open <= 0 || f.InsertTxn <= 0 || f.KeyedInsertTxn <= 0 {
			t.Errorf("RawFloor = %+v; want positive durations", f)
		}
		left, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) != 0 {
			t.Errorf("RawFloor left %d entries in its directory", len(left))
		}
	})
	t.Run("ErrMissingDir", func(t *testing.T) {
		_, err := bench.RawFloor(filepath.Join(t.TempDir(), "missing"))
		if err == nil || !strings.HasPrefix(err.Error(), "bench: raw floor: ") || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("err = %v, want a raw floor error wrapping fs.ErrNotExist", err)
		}
	})
}

func TestRawKeyedGrowth(t *testing.T) {
	dir := t.TempDir()
	d, made, err := bench.RawKeyedGrowth(dir, 1500)
	if err != nil {
		t.Fatal(err)
	}
	if d <= 0 || made != 1500 {
		t.Errorf("RawKeyedGrowth = %v, %d; want a positive duration, 1500", d, made)
	}
	if _, made, err := bench.RawKeyedGrowth(dir, 3); err != nil || made != bench.MinGrownRows {
		t.Errorf("RawKeyedGrowth(3) made %d, %v; want %d", made, err, bench.MinGrownRows)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("RawKeyedGrowth left %d entries in its directory", len(left))
	}
	_, _, err = bench.RawKeyedGrowth(filepath.Join(dir, "missing"), 10)
	if err == nil || !strings.HasPrefix(err.Error(), "bench: raw floor: ") || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v, want a raw floor error wrapping fs.ErrNotExist", err)
	}
}
