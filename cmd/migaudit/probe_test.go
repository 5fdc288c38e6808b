package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/migaudit/migaudit/harnesses/probe"
)

func TestProbeFlagErrors(t *testing.T) {
	tests := []struct {
		o    probeOptions
		want string
	}{
		{probeOptions{format: "table", refuse: "none"}, "exactly one of"},
		{probeOptions{impl: "quic-go", target: "x:1", format: "table", refuse: "none"}, "exactly one of"},
		{probeOptions{target: "127.0.0.1:1", format: "yaml", refuse: "none"}, "--format"},
		{probeOptions{target: "127.0.0.1:1", format: "json", refuse: "maybe"}, "--refuse"},
		{probeOptions{targetsFile: "t.txt", format: "json", refuse: "none"}, "--out"},
	}
	for _, tt := range tests {
		err := runProbe(context.Background(), tt.o, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: err = %v, want mention of %q", tt.o, err, tt.want)
		}
	}
}

func TestProbeTargetJSON(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan net.Addr, 1)
	go probe.Serve(ctx, probe.ServerOptions{Listen: "127.0.0.1:0"}, ready)
	var addr net.Addr
	select {
	case addr = <-ready:
	case <-time.After(5 * time.Second):
		t.Fatal("server did not start")
	}
	var out bytes.Buffer
	o := probeOptions{target: addr.String(), sni: "localhost", local: "127.0.0.1", via: "127.0.0.2", insecure: true,
		format: "json", refuse: "none", path: "/", timeout: 2 * time.Second}
	if err := runProbe(ctx, o, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	var rs []probe.Result
	if err := json.Unmarshal(out.Bytes(), &rs); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out.String())
	}
	if len(rs) != 1 || rs[0].Class != probe.Full {
		t.Fatalf("results %+v, want one full", rs)
	}
}
