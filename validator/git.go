package validator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/migaudit/migaudit/data/mirrors"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// findMirror looks for upstream's mirror in each directory of list (a list,
// separated as $PATH is), as every command finds one (package mirrors):
// <dir>/<owner>+<name>/repo, or <dir>/<name>.git as in the clones
// `migaudit reproduce` makes in the cache without a mirror.
func findMirror(list, upstream string) (string, error) { return mirrors.Find(list, upstream) }

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
var errNoSource = mirrors.ErrNoSource

func openTree(mirrors, upstream, commit string) (*sourceTree, error) {
	dir, err := findMirror(mirrors, upstream)
	if err != nil {
		return nil, err
	}
	return openTreeAt(dir, commit)
}

// openTreeAt reads commit out of the clone or bare mirror at dir.
func openTreeAt(dir, commit string) (*sourceTree, error) {
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

// text is the file's content.
func (t *sourceTree) text(path string) (string, error) {
	l, err := t.lines(path)
	if err != nil {
		return "", err
	}
	return strings.Join(l, "\n"), nil
}

// paths lists every blob path in the tree.
func (t *sourceTree) paths() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.list != nil {
		return t.list
	}
	// Names from the tree objects alone: Files() would decode every
	// blob of the tree just to name it.
	var out []string
	w := object.NewTreeWalker(t.tree, true, nil)
	defer w.Close()
	for {
		name, e, err := w.Next()
		if err != nil {
			break
		}
		if e.Mode.IsFile() {
			out = append(out, name)
		}
	}
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
