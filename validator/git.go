package validator

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// findMirror looks for upstream's mirror in each directory of mirrors (a
// list, separated as $PATH is): <dir>/<owner>+<name>/repo, or <dir>/<name>.git
// as in the clones `migaudit reproduce` makes in the cache without a mirror.
func findMirror(mirrors, upstream string) (string, error) {
	if mirrors == "" {
		return "", fmt.Errorf("%w: no mirror directory (set --mirrors or MIGAUDIT_MIRRORS)", errNoSource)
	}
	var tried []string
	for _, m := range filepath.SplitList(mirrors) {
		if m == "" {
			continue
		}
		dir, err := mirrorDir(m, upstream)
		if err != nil {
			return "", err
		}
		u := strings.TrimSuffix(strings.TrimSuffix(upstream, "/"), ".git")
		for _, c := range []string{dir, filepath.Join(m, u[strings.LastIndex(u, "/")+1:]+".git")} {
			if _, err := os.Stat(c); err == nil {
				return c, nil
			}
		}
		tried = append(tried, dir)
	}
	return "", fmt.Errorf("%w: no mirror at %s", errNoSource, strings.Join(tried, ", "))
}

// sourceTree reads files straight out of git object storage at one commit:
// no work tree, so nothing edited locally can leak into a check.
type sourceTree struct {
	repoDir string
	commit  string
	tree    *object.Tree

	mu    sync.Mutex
	files map[string][]string // path → lines
	list  []string
}

// errNoSource marks a missing mirror or commit; a claim resting on it is
// UNVERIFIABLE, never PASS.
var errNoSource = errors.New("source unavailable")

// mirrorDir maps an upstream URL to <mirrors>/<owner>+<name>/repo.
func mirrorDir(mirrors, upstream string) (string, error) {
	u := strings.TrimSuffix(strings.TrimSuffix(upstream, "/"), ".git")
	parts := strings.Split(u, "/")
	if len(parts) < 2 {
		return "", fmt.Errorf("upstream %q is not owner/name", upstream)
	}
	owner, name := parts[len(parts)-2], parts[len(parts)-1]
	return filepath.Join(mirrors, owner+"+"+name, "repo"), nil
}

func openTree(mirrors, upstream, commit string) (*sourceTree, error) {
	dir, err := findMirror(mirrors, upstream)
	if err != nil {
		return nil, err
	}
	repo, err := openRepo(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: open %s: %v", errNoSource, dir, err)
	}
	c, err := repo.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		// The mirror exists but lacks the commit: that is a finding, not
		// an absence of source.
		return nil, fmt.Errorf("commit %s not in %s: %v", commit, dir, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("tree of %s in %s: %v", commit, dir, err)
	}
	return &sourceTree{repoDir: dir, commit: commit, tree: tree, files: map[string][]string{}}, nil
}

// repoObjectCache bounds go-git's cache of decoded objects per
// repository (its default, 96 MiB, held for each of the fifteen
// repositories a validation opens, was most of its memory): the validator
// keeps the lines it reads itself, so the cache only serves delta bases.
const repoObjectCache = 1 * cache.MiByte

// openRepo opens a bare mirror or a clone's .git with a bounded cache.
func openRepo(dir string) (*git.Repository, error) {
	gitDir := dir
	if st, err := os.Stat(filepath.Join(dir, ".git")); err == nil && st.IsDir() {
		gitDir = filepath.Join(dir, ".git")
	}
	if _, err := os.Stat(filepath.Join(gitDir, "objects")); err != nil {
		return git.PlainOpen(dir)
	}
	st := filesystem.NewStorage(osfs.New(gitDir), cache.NewObjectLRU(repoObjectCache))
	return git.Open(st, nil)
}

// lines returns the file's lines (1-based access via lines[n-1]).
func (t *sourceTree) lines(path string) ([]string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l, ok := t.files[path]; ok {
		if l == nil {
			return nil, fmt.Errorf("%s not in tree at %s", path, t.commit[:8])
		}
		return l, nil
	}
	f, err := t.tree.File(path)
	if err != nil {
		t.files[path] = nil
		return nil, fmt.Errorf("%s not in tree at %s", path, t.commit[:8])
	}
	s, err := f.Contents()
	if err != nil {
		return nil, fmt.Errorf("read %s at %s: %v", path, t.commit[:8], err)
	}
	l := strings.Split(s, "\n")
	t.files[path] = l
	return l, nil
}

// paths lists every blob path in the tree.
func (t *sourceTree) paths() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.list != nil {
		return t.list
	}
	var out []string
	_ = t.tree.Files().ForEach(func(f *object.File) error {
		out = append(out, f.Name)
		return nil
	})
	t.list = out
	return out
}

// sourceCache opens each (upstream, commit) once.
type sourceCache struct {
	mirrors string
	mu      sync.Mutex
	trees   map[string]*sourceTree
	errs    map[string]error
}

func newSourceCache(mirrors string) *sourceCache {
	return &sourceCache{mirrors: mirrors, trees: map[string]*sourceTree{}, errs: map[string]error{}}
}

func (c *sourceCache) get(upstream, commit string) (*sourceTree, error) {
	key := upstream + "@" + commit
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.trees[key]; ok {
		return t, nil
	}
	if err, ok := c.errs[key]; ok {
		return nil, err
	}
	t, err := openTree(c.mirrors, upstream, commit)
	if err != nil {
		c.errs[key] = err
		return nil, err
	}
	c.trees[key] = t
	return t, nil
}

// drop forgets an opened tree, its lines and its repository's indexes.
func (c *sourceCache) drop(upstream, commit string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.trees, upstream+"@"+commit)
}
