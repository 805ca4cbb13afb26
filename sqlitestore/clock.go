package sqlitestore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ncruces/go-sqlite3"
)

// The SQL clock.
//
// SQLite reads 'now' from the VFS, which this driver hard-wires to time.Now,
// and no connection hook can change that. So every date and time function is
// shadowed on each connection by a function of the same name that substitutes
// the instance clock for 'now' and delegates the rest to the unmodified
// built-in on a helper connection: modifiers, formats and error messages stay
// exactly SQLite's. CURRENT_TIMESTAMP, CURRENT_DATE and CURRENT_TIME compile to
// calls of functions with those names, so they are shadowed too, which covers
// DEFAULT CURRENT_TIMESTAMP. The 'localtime' and 'utc' modifiers are no-ops:
// the SQL time zone is pinned to UTC whatever the process's time zone is.

// dateFuncs are the built-ins shadowed with every arity.
var dateFuncs = []string{"date", "time", "datetime", "julianday", "unixepoch", "strftime", "timediff"}

// currentFuncs map the CURRENT_* keywords to the built-in they mean and
// to its format, computed in Go for the years SQLite formats plainly (0 to
// 9999); SQLite truncates to the second, and so does the layout.
var currentFuncs = map[string]struct{ fn, layout string }{
	"current_timestamp": {"datetime", "2006-01-02 15:04:05"},
	"current_date":      {"date", "2006-01-02"},
	"current_time":      {"time", "15:04:05"},
}

// nowLayout is the text 'now' becomes: SQLite's own precision (milliseconds).
const nowLayout = "2006-01-02 15:04:05.000"

// neutralModifier replaces 'localtime' and 'utc', which are identities when
// the local time zone is UTC.
const neutralModifier = "+0 seconds"

// installClock shadows the date and time functions of c so that 'now' reads
// now. The functions are DETERMINISTIC, so date(x) stays
// legal in indexes and generated columns, and INNOCUOUS, so schema DEFAULTs
// may call them.
func installClock(c *sqlite3.Conn, now func() time.Time) error {
	const flags = sqlite3.DETERMINISTIC | sqlite3.INNOCUOUS
	for _, fn := range dateFuncs {
		if err := c.CreateFunction(fn, -1, flags, func(ctx sqlite3.Context, args ...sqlite3.Value) {
			evalDate(ctx, now, fn, args, false)
		}); err != nil {
			return err
		}
	}
	for kw, cf := range currentFuncs {
		fn, layout := cf.fn, cf.layout
		if err := c.CreateFunction(kw, 0, flags, func(ctx sqlite3.Context, _ ...sqlite3.Value) {
			if t := now().UTC(); t.Year() >= 0 && t.Year() <= 9999 {
				var buf [len("2006-01-02 15:04:05")]byte
				ctx.ResultRawText(t.AppendFormat(buf[:0], layout))
				return
			}
			evalDate(ctx, now, fn, nil, true)
		}); err != nil {
			return err
		}
	}
	return nil
}

// evalDate evaluates the built-in fn on a helper connection.
func evalDate(ctx sqlite3.Context, now func() time.Time, fn string, args []sqlite3.Value, current bool) {
	// Positions of time values and of the first modifier.
	timeFrom, timeTo, modFrom := 0, 1, 1
	switch fn {
	case "strftime":
		timeFrom, timeTo, modFrom = 1, 2, 2
	case "timediff":
		timeFrom, timeTo, modFrom = 0, 2, len(args)
	}
	// datetime(), date(), strftime(fmt)… and CURRENT_* mean 'now'.
	implicitNow := current || (fn != "timediff" && len(args) == timeFrom)
	n := len(args)
	if implicitNow {
		n++
	}

	h, err := getDateHelper()
	if err != nil {
		ctx.ResultError(err)
		return
	}
	size := 0 // the bytes of the text and blob arguments
	defer func() {
		if r := recover(); r != nil {
			h.close()
			msg := fmt.Sprint(r)
			if err, ok := r.(error); ok && strings.Contains(err.Error(), "out of memory") {
				msg = fmt.Sprintf("out of memory: the date and time functions evaluate a call in %d MiB, and its arguments take %d bytes", dateHelperMemory>>20, size)
			}
			// No "sqlitestore: ": the error SQLite reports is this text,
			// and it is this package's *Error.
			ctx.ResultError(fmt.Errorf("%s(): %s", fn, msg))
			return
		}
		putDateHelper(h)
	}()

	st, err := h.stmt(fn, n)
	if err != nil {
		ctx.ResultError(err)
		return
	}
	defer st.Reset()
	nowText := ""
	nowAt := func() string {
		if nowText == "" {
			nowText = now().UTC().Format(nowLayout)
		}
		return nowText
	}
	vals := make([]any, n)
	for i, a := range args {
		// An empty blob stays one: bound as nil it would be NULL.
		vals[i] = copyValue(a)
		switch t := vals[i].(type) {
		case []byte:
			size += len(t)
		case string:
			size += len(t)
			switch {
			case i >= timeFrom && i < timeTo && strings.EqualFold(t, "now"):
				vals[i] = nowAt()
			case i >= modFrom && (strings.EqualFold(t, "localtime") || strings.EqualFold(t, "utc")):
				vals[i] = neutralModifier
			}
		}
	}
	if implicitNow {
		vals[n-1] = nowAt()
	}
	if err := bindArgs(st, st.BindCount(), vals); err != nil {
		ctx.ResultError(err)
		return
	}
	if !st.Step() {
		if err := st.Err(); err != nil {
			ctx.ResultError(err)
		} else {
			ctx.ResultNull()
		}
		return
	}
	switch st.ColumnType(0) {
	case sqlite3.INTEGER:
		ctx.ResultInt64(st.ColumnInt64(0))
	case sqlite3.FLOAT:
		ctx.ResultFloat(st.ColumnFloat(0))
	case sqlite3.TEXT:
		ctx.ResultText(st.ColumnText(0))
	default:
		ctx.ResultNull()
	}
}

// dateHelper is a plain in-memory connection whose date functions are
// SQLite's own. Helpers are shared by every connection of the process through
// a small channel of idle ones; each is used by one goroutine at a time.
type dateHelper struct {
	c     *sqlite3.Conn
	stmts map[string]*sqlite3.Stmt
}

// maxIdleDateHelpers bounds the helpers kept open while unused. A helper costs
// about as much memory as any connection, so only a handful are kept; more
// are opened only while more goroutines evaluate date functions at once.
const maxIdleDateHelpers = 4

// dateHelperMemory caps a helper's memory: it only evaluates single calls.
const dateHelperMemory = 4 << 20

// idleDateHelpers holds the helpers kept open while unused.
var idleDateHelpers = make(chan *dateHelper, maxIdleDateHelpers)

func getDateHelper() (*dateHelper, error) {
	select {
	case h := <-idleDateHelpers:
		return h, nil
	default:
	}
	c, err := sqlite3.OpenContext(sqlite3.WithMaxMemory(context.Background(), dateHelperMemory), ":memory:")
	if err != nil {
		return nil, fmt.Errorf("opening a date helper: %w", err)
	}
	return &dateHelper{c: c, stmts: make(map[string]*sqlite3.Stmt)}, nil
}

func putDateHelper(h *dateHelper) {
	select {
	case idleDateHelpers <- h:
	default:
		h.close()
	}
}

// stmt returns "SELECT fn(?,…)" with n parameters, prepared once per helper.
func (h *dateHelper) stmt(fn string, n int) (*sqlite3.Stmt, error) {
	key := fn + "/" + strconv.Itoa(n)
	if st, ok := h.stmts[key]; ok {
		return st, nil
	}
	sql := "SELECT " + fn + "(" + strings.TrimSuffix(strings.Repeat("?,", n), ",") + ")"
	st, _, err := h.c.Prepare(sql)
	if err != nil {
		return nil, err
	}
	h.stmts[key] = st
	return st, nil
}

func (h *dateHelper) close() {
	defer func() { _ = recover() }() // a helper that ran out of memory is dropped either way
	for _, st := range h.stmts {
		st.Close()
	}
	h.c.Close()
}
