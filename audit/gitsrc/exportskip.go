package gitsrc

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ExportSkipping is Export without the tree paths under the given prefixes
// ("test/"): they are neither read nor written. A mirror may lack blobs a
// build never reads (the quictls/openssl mirror lacks one test vector that
// msquic's no-tests build of it never touches), and Export would stop at
// the first of them. It returns the gitlinks outside the skipped prefixes
// and how many files were skipped.
func (s *Snapshot) ExportSkipping(dir string, prefixes []string) (submodules map[string]string, skipped int, err error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, 0, fmt.Errorf("export %s: %w", s.commit.String()[:12], err)
	}
	submodules = map[string]string{}
	walker := object.NewTreeWalker(s.tree, true, nil)
	defer walker.Close()
	for {
		name, e, err := walker.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, skipped, fmt.Errorf("export %s: walk tree: %w", s.commit.String()[:12], err)
		}
		if hasPrefix(name, prefixes) {
			if e.Mode != filemode.Dir {
				skipped++
			}
			continue
		}
		if name == "" || filepath.IsAbs(name) || strings.HasPrefix(filepath.Clean(name), "..") || strings.Contains(name, "/../") {
			return nil, skipped, fmt.Errorf("export %s: refusing tree path %q", s.commit.String()[:12], name)
		}
		dst := filepath.Join(dir, filepath.FromSlash(name))
		switch e.Mode {
		case filemode.Dir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return nil, skipped, err
			}
		case filemode.Submodule:
			submodules[name] = e.Hash.String()
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return nil, skipped, err
			}
		case filemode.Regular, filemode.Executable, filemode.Deprecated, filemode.Symlink:
			if err := s.writeBlob(name, dst, e); err != nil {
				return nil, skipped, fmt.Errorf("export %s: %s: %w", s.commit.String()[:12], name, err)
			}
		}
	}
	return submodules, skipped, nil
}

func hasPrefix(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if name == strings.TrimSuffix(p, "/") || strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
