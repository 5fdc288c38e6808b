package tracecmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// Command is a trace command: its help, its flags and what it runs. A
// Command is used once: its flag values live in Flags and in Run's closure.
type Command struct {
	Use, Short, Long, Example string
	// Flags are the command's flags, every one of them long (--name; the
	// standard library also reads -name).
	Flags *flag.FlagSet
	// MinArgs is the least number of positional arguments.
	MinArgs int
	// Run runs the command once its flags are set; args are the
	// positional arguments.
	Run func(stdout, stderr io.Writer, args []string) error
}

// Name is the command's name, the first word of Use.
func (c *Command) Name() string { name, _, _ := strings.Cut(c.Use, " "); return name }

// ErrHelp is returned by Execute when the arguments ask for help, which
// the whole command line prints (cobra's format, every command's).
var ErrHelp = flag.ErrHelp

// Execute parses args as cobra would and runs the command. Flags and
// positional arguments may come in any order (`analyze TRACE --format
// json`); "--" ends the flags. A flag error, too few arguments, or Run's
// error is returned for the caller to print on one line.
func (c *Command) Execute(args []string, stdout, stderr io.Writer) error {
	c.Flags.SetOutput(io.Discard) // the caller prints the error; help comes from the core
	pos, err := parseInterspersed(c.Flags, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ErrHelp
		}
		return fmt.Errorf("%s: %w", c.Name(), err)
	}
	if len(pos) < c.MinArgs {
		// cobra.MinimumNArgs's wording, so both executables say the same.
		return fmt.Errorf("requires at least %d arg(s), only received %d", c.MinArgs, len(pos))
	}
	return c.Run(stdout, stderr, pos)
}

// parseInterspersed parses flags found anywhere in args, as pflag does,
// and returns the positional arguments in order. The standard library's
// Parse stops at the first positional argument: parse again after it.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil // "--": all the rest is positional
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// durationValue is a duration flag that records whether it was given
// (--migration-at 0s differs from no --migration-at). Its type name makes
// pflag call it "duration" in cobra's help.
type durationValue struct {
	d   time.Duration
	set bool
}

func (v *durationValue) String() string {
	if v == nil {
		return "0s"
	}
	return v.d.String()
}

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("parse error") // flag's own wording for a bad duration
	}
	v.d, v.set = d, true
	return nil
}

// stringArrayValue is a repeatable string flag: each use appends one value,
// commas included (pflag's StringArray).
type stringArrayValue []string

func (v *stringArrayValue) String() string {
	if v == nil || len(*v) == 0 {
		return "[]"
	}
	return "[" + strings.Join(*v, ",") + "]"
}

func (v *stringArrayValue) Set(s string) error { *v = append(*v, s); return nil }
