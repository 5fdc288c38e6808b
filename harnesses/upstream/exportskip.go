package upstream

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ExportSkipping is Export without the tree paths under the given prefixes
// (for example a submodule's test/ tree that the build never reads and a
// mirror may hold incompletely). The skipped prefixes are written to the
// build log and recorded in the artifact's Deps beside the commit.
func (w *Workspace) ExportSkipping(src Source, dst string, prefixes []string) (string, error) {
	return w.export(src, dst, prefixes)
}

// export is Export, or ExportSkipping when prefixes is not nil.
func (w *Workspace) export(src Source, dst string, prefixes []string) (string, error) {
	r, err := resolve(src)
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(dst); err == nil && st.IsDir() {
		if ents, _ := os.ReadDir(dst); len(ents) == 0 {
			_ = os.Remove(dst) // an empty submodule directory from the parent's export
		}
	}
	_, skipped, err := r.snap.ExportSkipping(dst, prefixes)
	if err != nil {
		return "", err
	}
	rel := dst
	if p, err := filepath.Rel(filepath.Dir(w.SrcDir), dst); err == nil {
		rel = p
	}
	w.mu.Lock()
	w.extra[rel] = r.commit
	if prefixes != nil {
		w.extra[rel+".skipped"] = fmt.Sprintf("%d files under %s", skipped, strings.Join(prefixes, ", "))
	}
	w.mu.Unlock()
	if prefixes == nil {
		fmt.Fprintf(w.Log, "exported %s %s from %s into %s\n", src.Impl, r.commit, r.repo.Dir, dst)
	} else {
		fmt.Fprintf(w.Log, "exported %s %s from %s into %s, skipping %d files under %s\n", src.Impl, r.commit, r.repo.Dir, dst, skipped, strings.Join(prefixes, ", "))
	}
	return r.commit, nil
}
