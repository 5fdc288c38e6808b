package run

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// ProcSpec describes a process a harness starts with Start.
type ProcSpec struct {
	Role string
	NS   string
	Cmd  *exec.Cmd
	// Dir is the repetition directory; output goes to <Role>.stdout and
	// <Role>.stderr there (".gz" appended when compressed).
	Dir string
	// OnStdout / OnStderr, when set, see every line as it is written.
	OnStdout, OnStderr func(line string)
	// GzipStdout / GzipStderr compress the saved stream (debug logs of
	// tens of MB).
	GzipStdout, GzipStderr bool
	// SaveStderr, when set, says which stderr lines the saved file keeps
	// (OnStderr still sees every line); the others are counted in the
	// process record's StderrLinesDropped.
	SaveStderr func(line string) bool
}

// Proc is a started process.
type Proc struct {
	spec   ProcSpec
	rec    Process
	done   chan struct{}
	err    error
	mu     sync.Mutex
	killed bool
	wg     sync.WaitGroup
	files  []io.Closer
}

// Start starts spec.Cmd in its own process group with its output saved in
// spec.Dir. Files are created with O_EXCL: a harness can never overwrite
// another process's output.
func Start(spec ProcSpec) (*Proc, error) {
	p := &Proc{spec: spec, done: make(chan struct{})}
	p.rec = Process{Role: spec.Role, Argv: spec.Cmd.Args, NS: spec.NS}
	outW, outName, err := p.sink(spec.Role+".stdout", spec.GzipStdout)
	if err != nil {
		return nil, err
	}
	errW, errName, err := p.sink(spec.Role+".stderr", spec.GzipStderr)
	if err != nil {
		p.closeFiles()
		return nil, err
	}
	p.rec.Stdout, p.rec.Stderr = outName, errName
	outR, err := spec.Cmd.StdoutPipe()
	if err != nil {
		p.closeFiles()
		return nil, fmt.Errorf("%s: stdout pipe: %w", spec.Role, err)
	}
	errR, err := spec.Cmd.StderrPipe()
	if err != nil {
		p.closeFiles()
		return nil, fmt.Errorf("%s: stderr pipe: %w", spec.Role, err)
	}
	if spec.Cmd.SysProcAttr == nil {
		spec.Cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	spec.Cmd.SysProcAttr.Setpgid = true
	spec.Cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	p.rec.Start = time.Now()
	if err := spec.Cmd.Start(); err != nil {
		p.closeFiles()
		return nil, fmt.Errorf("start %s (%s): %w", spec.Role, spec.Cmd.Path, err)
	}
	p.wg.Add(2)
	go p.pump(outR, outW, spec.OnStdout, nil, nil)
	go p.pump(errR, errW, spec.OnStderr, spec.SaveStderr, &p.rec.StderrLinesDropped)
	go func() {
		p.wg.Wait() // pipes drained before Wait closes them
		p.err = spec.Cmd.Wait()
		p.rec.End = time.Now()
		p.rec.ExitCode = -1
		if spec.Cmd.ProcessState != nil {
			p.rec.ExitCode = spec.Cmd.ProcessState.ExitCode()
		}
		p.closeFiles()
		close(p.done)
	}()
	return p, nil
}

func (p *Proc) sink(name string, gz bool) (io.Writer, string, error) {
	if gz {
		name += ".gz"
	}
	f, err := os.OpenFile(filepath.Join(p.spec.Dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, "", fmt.Errorf("%s output: %w", p.spec.Role, err)
	}
	if !gz {
		p.files = append(p.files, f)
		return f, name, nil
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	p.files = append(p.files, zw, f) // gzip first, then the file
	return zw, name, nil
}

func (p *Proc) closeFiles() {
	for _, c := range p.files {
		_ = c.Close()
	}
	p.files = nil
}

func (p *Proc) pump(r io.Reader, w io.Writer, on func(string), save func(string) bool, dropped *int) {
	defer p.wg.Done()
	if on == nil && save == nil {
		_, _ = io.Copy(w, r)
		return
	}
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			l := string(trimEOL(line))
			if save == nil || save(l) {
				_, _ = w.Write(line)
			} else {
				p.mu.Lock()
				*dropped++
				p.mu.Unlock()
			}
			if on != nil {
				on(l)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			_, _ = io.Copy(w, br)
			return
		}
	}
}

func trimEOL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// Done is closed when the process has exited and its output is saved.
func (p *Proc) Done() <-chan struct{} { return p.done }

// AwaitReady waits until ready is closed (the process said it listens). It
// fails naming what and its stderr file if the process exits first, if
// nothing is said within timeout, or when ctx ends.
func (p *Proc) AwaitReady(ctx context.Context, ready <-chan struct{}, what, stderr string, timeout time.Duration) error {
	select {
	case <-ready:
		return nil
	case <-p.Done():
		return fmt.Errorf("%s exited (code %d) before listening; see %s", what, p.Record().ExitCode, stderr)
	case <-time.After(timeout):
		return fmt.Errorf("%s did not report listening within %v", what, timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Wait waits for exit, at most d; on timeout it kills the process group.
// It returns the process record.
func (p *Proc) Wait(d time.Duration) Process {
	select {
	case <-p.done:
	case <-time.After(d):
		p.Kill()
		<-p.done
	}
	return p.Record()
}

// AwaitExit waits for a process that exits by itself once its work is done
// (a server once the client's connection is freed): up to wait, then it
// Stops it with sig and grace. It returns the record and, when it had to
// stop it, the note saying so ("" otherwise).
func (p *Proc) AwaitExit(what string, wait time.Duration, sig syscall.Signal, grace time.Duration) (Process, string) {
	note := ""
	select {
	case <-p.Done():
	case <-time.After(wait):
		note = fmt.Sprintf("%s still running %d s after the client exited: stopped with %s", what, int(wait/time.Second), signalName(sig))
		p.Stop(sig, grace)
	}
	return p.Wait(time.Second), note
}

func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGKILL:
		return "SIGKILL"
	}
	return sig.String()
}

// Stop sends sig to the process group and waits up to grace for it to exit
// (programs that flush their traces on SIGINT), then Kills.
func (p *Proc) Stop(sig syscall.Signal, grace time.Duration) { p.signal(sig, grace, p.Kill) }

// Kill stops the whole process group (SIGTERM, then SIGKILL after 2 s).
func (p *Proc) Kill() {
	p.signal(syscall.SIGTERM, 2*time.Second, func() { _ = syscall.Kill(-p.spec.Cmd.Process.Pid, syscall.SIGKILL) })
}

// signal sends sig to the process group unless it has exited, and calls
// then if it has not exited after grace.
func (p *Proc) signal(sig syscall.Signal, grace time.Duration, then func()) {
	select {
	case <-p.done:
		return
	default:
	}
	p.mu.Lock()
	p.killed = true
	p.mu.Unlock()
	_ = syscall.Kill(-p.spec.Cmd.Process.Pid, sig)
	select {
	case <-p.done:
	case <-time.After(grace):
		then()
	}
}

// Record is the process record (complete once Done is closed).
func (p *Proc) Record() Process {
	p.mu.Lock()
	r := p.rec
	r.Killed = p.killed
	p.mu.Unlock()
	return r
}
