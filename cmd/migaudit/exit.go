package main

// How migaudit ends: every failure is one line on standard error, with the
// exit status the command chose.

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// ExitError lets a command choose its exit status (e.g. validate: 1 on
// FAIL, run: 3 when repetitions stay spoiled) while still printing one line.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// Code is the exit status for err: 0 for none, the status an ExitError in
// the chain names, otherwise 1.
func Code(err error) int {
	if err == nil {
		return 0
	}
	var ee *ExitError
	if errors.As(err, &ee) && ee.Code != 0 {
		return ee.Code
	}
	return 1
}

// Fail prints err as migaudit's one-line failure: a user must see what
// failed and where.
func Fail(stderr io.Writer, err error) {
	msg := strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
	fmt.Fprintf(stderr, "migaudit: %s\n", msg)
}
