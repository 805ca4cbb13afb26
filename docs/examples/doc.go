// Package examples holds the compiled code of Seahaven's guides.
package examples
