// Package upstream builds an implementation out of tree from a user's
// checkout, cached by commit and build options, for the live harnesses that
// have no installable package (picoquic, msquic).
//
// The source is never the user's work tree: the commit's tree is exported
// from git object storage (audit/gitsrc) into a cache directory, and the
// build runs there. The cache directory is keyed by the implementation, its
// commit, every dependency's commit, the build options, the project files
// built with it (the harness's own C sources) and a recipe version; a second
// Ensure with the same key reuses the build when every recorded output's
// sha256 still matches, and rebuilds it from a fresh export otherwise.
//
// API (stable; harnesses/picoquic and harnesses/msquic build on it):
//
//	type Source struct{ Impl, Upstream, Dir, Commit string }
//	    // Dir "" = resolve like `audit`: a mirror under $MIGAUDIT_MIRRORS
//	    // (<dir>/<owner>+<name>/repo, …) or a clone already in the user cache
//	    // (<cache>/migaudit/src/<name>.git); never cloned from the network here.
//	    // Commit "" = the pinned commit of data/implementations.json (Impl).
//	type Recipe struct {
//	    Impl     string
//	    Version  string             // recipe revision; part of the key
//	    Src      Source
//	    Deps     map[string]Source  // "picotls" → h2o/picotls at a recorded commit
//	    Options  []string           // build options (cmake -D…); part of the key
//	    Files    map[string][]byte  // project files (harness sources) → w.FilesDir; part of the key
//	    Tools    []string           // executables needed ("cmake", "cc", "c++", "make")
//	    Packages []string           // Debian packages needed ("libssl-dev"); versions recorded
//	    Build    func(ctx context.Context, w *Workspace) error
//	    Outputs  []string           // artefacts relative to w.BuildDir whose sha256 is recorded
//	}
//	func Ensure(ctx context.Context, r Recipe, log io.Writer) (*Artifact, error)
//	type Workspace struct {
//	    SrcDir, BuildDir, FilesDir string
//	    DepDirs    map[string]string // name → exported tree
//	    Submodules map[string]string // gitlinks of Src: path → commit
//	    Options    []string
//	    Jobs       int
//	    Log        io.Writer          // build.log in the cache directory
//	}
//	func (w *Workspace) Run(ctx context.Context, dir, name string, args ...string) error
//	func (w *Workspace) Export(src Source, dst string) (commit string, err error) // e.g. a submodule; recorded in Artifact.Deps
//	type Artifact struct{ Impl, Dir, BuildDir, Key, Commit, Source string; Deps map[string]string;
//	    Options []string; SHA256 map[string]string; Tools map[string]string; Reused bool; … }
//	func (a *Artifact) Path(output string) string
//
//	type Options struct{ Source, Commit string; Deps map[string]string } // --source, --commit, --dep
//	type Configurable interface{ ConfigureUpstream(Options) error }        // implemented by such harnesses
//	func ParseDeps(flags []string) (map[string]string, error)            // "picotls=DIR"
//
// Every error is one line saying what is missing and what to install or
// fetch: `cmake not found: apt-get install cmake`, `no source for picotls
// (https://github.com/h2o/picotls): pass --dep picotls=DIR …`.
//
// The cache lives in $MIGAUDIT_BUILD_CACHE, else <user cache>/migaudit/build;
// nothing is ever written into the repository or the user's checkout. Builds
// run with the network-free settings the recipe passes (picoquic:
// PICOQUIC_FETCH_PTLS=OFF, FETCHCONTENT_FULLY_DISCONNECTED=ON).
package upstream
