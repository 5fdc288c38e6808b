package gitsrc

import (
	"io"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Export writes the snapshot's tree into dir, which must not exist yet (its
// parent must): regular files with their executable bit, symbolic links and
// directories, read from object storage — never from a work tree.
// Submodules are not followed; their paths and pinned commits (gitlinks)
// are returned so a caller can export them from their own repositories.
func (s *Snapshot) Export(dir string) (submodules map[string]string, err error) {
	submodules, _, err = s.ExportSkipping(dir, nil)
	return submodules, err
}

func (s *Snapshot) writeBlob(name, dst string, e object.TreeEntry) error {
	blob, err := s.repo.r.BlobObject(e.Hash)
	if err != nil {
		return err
	}
	rd, err := blob.Reader()
	if err != nil {
		return err
	}
	defer rd.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if e.Mode == filemode.Symlink {
		target, err := io.ReadAll(rd)
		if err != nil {
			return err
		}
		return os.Symlink(string(target), dst)
	}
	perm := os.FileMode(0o644)
	if e.Mode == filemode.Executable {
		perm = 0o755
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, rd); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
