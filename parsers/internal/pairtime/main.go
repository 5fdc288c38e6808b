// Command pairtime times two commands as whole processes, interleaved pair
// by pair (A, B, A, B, ...; the order within a pair alternates), so that
// load from other work on a shared machine falls on both alike. It reports
// the median of the per-pair ratios A/B of wall time and of CPU time
// (user+system), each side's median wall and CPU time, each side's peak
// RSS (the largest maxrss over its runs) and the load average before and
// after. Output of both commands goes to /dev/null.
//
//	go run ./parsers/internal/pairtime -n 21 \
//	  -a 'migaudit analyze --impl quic-go trace.sqlog.gz --format json' \
//	  -b 'gzip -dc trace.sqlog.gz'
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"time"
)

type run struct {
	wall, cpu time.Duration
	rssKB     int64
}

func measure(args []string) (run, error) {
	cmd := exec.Command(args[0], args[1:]...)
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return run{}, err
	}
	defer devnull.Close()
	cmd.Stdout, cmd.Stderr = devnull, devnull
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		return run{}, fmt.Errorf("%s: %w", strings.Join(args, " "), err)
	}
	wall := time.Since(t0)
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return run{wall: wall, cpu: cpu, rssKB: ru.Maxrss}, nil
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func load() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " ")
}

func main() {
	n := flag.Int("n", 21, "pairs")
	a := flag.String("a", "", "command A (split on blanks)")
	b := flag.String("b", "", "command B (split on blanks)")
	warm := flag.Int("warmup", 2, "unmeasured pairs first")
	flag.Parse()
	if *a == "" || *b == "" {
		fmt.Fprintln(os.Stderr, "pairtime: -a and -b are required")
		os.Exit(2)
	}
	A, B := strings.Fields(*a), strings.Fields(*b)
	l0 := load()
	var wr, cr, aw, bw, ac, bc []float64
	var arss, brss int64
	for i := -*warm; i < *n; i++ {
		var ra, rb run
		var err error
		if i%2 == 0 {
			if ra, err = measure(A); err == nil {
				rb, err = measure(B)
			}
		} else {
			if rb, err = measure(B); err == nil {
				ra, err = measure(A)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "pairtime:", err)
			os.Exit(1)
		}
		if i < 0 {
			continue
		}
		wr = append(wr, ra.wall.Seconds()/rb.wall.Seconds())
		if rb.cpu > 0 {
			cr = append(cr, ra.cpu.Seconds()/rb.cpu.Seconds())
		}
		aw, bw = append(aw, ra.wall.Seconds()), append(bw, rb.wall.Seconds())
		ac, bc = append(ac, ra.cpu.Seconds()), append(bc, rb.cpu.Seconds())
		arss, brss = max(arss, ra.rssKB), max(brss, rb.rssKB)
	}
	fmt.Printf("pairs %d, load average before %s, after %s\n", *n, l0, load())
	fmt.Printf("A: median wall %.3f s, median cpu %.3f s, peak RSS %.1f MiB  (%s)\n", median(aw), median(ac), float64(arss)/1024, *a)
	fmt.Printf("B: median wall %.3f s, median cpu %.3f s, peak RSS %.1f MiB  (%s)\n", median(bw), median(bc), float64(brss)/1024, *b)
	fmt.Printf("median A/B per pair: wall %.2f, cpu %.2f\n", median(wr), median(cr))
}
