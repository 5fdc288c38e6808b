// Package atomicfile writes result files so that a reader sees either the
// old content or the new, never half of it, and nothing is left behind when
// a write fails: a temporary file in the same directory, then a rename (or,
// for records that must never be replaced, a link).
package atomicfile

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Write replaces path with b (mode 0644).
func Write(path string, b []byte) error {
	return write(path, b, os.Rename)
}

// WriteJSON replaces path with v as indented JSON and a final newline.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	return Write(path, append(b, '\n'))
}

// Create writes b to path only if path does not exist yet; an existing file
// is never replaced, even one that appears while b is being written.
func Create(path string, b []byte) error {
	return write(path, b, func(tmp, path string) error {
		if err := os.Link(tmp, path); err != nil {
			return err
		}
		return os.Remove(tmp)
	})
}

func write(path string, b []byte, commit func(tmp, path string) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if _, err := f.Write(b); err != nil {
		return fail(fmt.Errorf("write %s: %w", path, err))
	}
	if err := f.Chmod(0o644); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := commit(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
