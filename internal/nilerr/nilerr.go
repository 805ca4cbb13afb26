// Package nilerr tells a nil pointer returned as an error from a nil
// error: world code and graders that write `var e *MyError; return e`
// hand the engine an error whose every method may dereference nil.
package nilerr

import "reflect"

// Is reports whether err is a non-nil error holding a nil pointer, a
// mistake Go compiles. It is safe for concurrent use.
func Is(err error) bool {
	if err == nil {
		return false
	}
	v := reflect.ValueOf(err)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
