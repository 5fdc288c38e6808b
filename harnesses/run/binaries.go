package run

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

// FileBinary checks that path is a regular, executable, non-empty file and
// returns its record with its sha256. An interrupted build once left
// zero-byte executables that its build tool called up to date; a zero-byte
// file is an error here, never a binary.
func FileBinary(role, path, version, versionSource string) (Binary, error) {
	st, err := os.Stat(path)
	if err != nil {
		return Binary{}, fmt.Errorf("%s binary %s: %w", role, path, err)
	}
	if !st.Mode().IsRegular() {
		return Binary{}, fmt.Errorf("%s binary %s is not a regular file", role, path)
	}
	if st.Size() == 0 {
		return Binary{}, fmt.Errorf("%s binary %s is zero bytes long (an interrupted build or install)", role, path)
	}
	if st.Mode().Perm()&0o111 == 0 {
		return Binary{}, fmt.Errorf("%s binary %s is not executable", role, path)
	}
	sum, err := SHA256File(path)
	if err != nil {
		return Binary{}, err
	}
	return Binary{Role: role, Path: path, Size: st.Size(), SHA256: sum, Version: version, VersionSource: versionSource}, nil
}

// SHA256File returns the hex sha256 of a file's content.
func SHA256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
