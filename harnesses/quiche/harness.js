'use strict';
// migaudit live harness for quiche 0.18.0, driven through the native binding
// shipped in @matrixai/quic-linux-x64 (node.napi.node). It uses quiche's own
// connection API directly: the application moves every datagram, so this
// file decides which UDP socket (path A or path B) each packet leaves from.
//
// Usage:
//   node harness.js server --listen IP:PORT --cert F --key F --out BASE [--cc cubic]
//   node harness.js client --server IP:PORT --local-a IP:PORT --local-b IP:PORT
//        --out BASE [--migrate-at-ms 5000] [--back-at-ms 0] [--duration-ms 15000] [--cc cubic]
//
// Both roles poll pathStats() every 5 ms and write
//   BASE.csv           time_us,path_id,local,peer,active,cwnd,bytes_in_flight,
//                      smoothed_rtt,min_rtt,latest_rtt   (one row per path per sample)
//   BASE.events.jsonl  one JSON object per quiche path event (and harness actions)
//   BASE.meta.json     reference clock, role, addresses, binding facts, totals
// The binding reports PathStats.rtt as whole milliseconds (Duration::as_millis,
// truncated), so smoothed_rtt is written as ms*1000 and carries 1 ms
// resolution; min_rtt, latest_rtt and bytes_in_flight are not exposed by the
// binding and are left empty.

const dgram = require('node:dgram');
const fs = require('node:fs');
const crypto = require('node:crypto');
const path = require('node:path');

const BINDING = '@matrixai/quic-linux-x64/node.napi.node';
const quiche = require(BINDING);

const ALPN = 'migaudit';
const SAMPLE_MS = 5;

function parseArgs(argv) {
  const out = { _: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a.startsWith('--')) {
      const k = a.slice(2);
      const v = argv[i + 1];
      if (v === undefined || v.startsWith('--')) throw new Error(`flag --${k} needs a value`);
      out[k] = v;
      i++;
    } else {
      out._.push(a);
    }
  }
  return out;
}

function parseHostPort(s, name) {
  if (!s) throw new Error(`missing --${name}`);
  const i = s.lastIndexOf(':');
  if (i <= 0) throw new Error(`--${name} ${s}: want IP:PORT`);
  const host = s.slice(0, i).replace(/^\[|\]$/g, '');
  const port = Number(s.slice(i + 1));
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--${name} ${s}: bad port`);
  return { host, port };
}

const hp = (h) => `${h.host}:${h.port}`;

// ---------- clock and output ----------
const t0 = process.hrtime.bigint();
const t0Unix = Date.now() * 1000; // µs since epoch at the reference instant (ms resolution)
const nowUs = () => Number((process.hrtime.bigint() - t0) / 1000n);

class Recorder {
  constructor(base, role, conn) {
    this.base = base;
    this.role = role;
    this.csvTmp = base + '.csv.tmp';
    this.evTmp = base + '.events.jsonl.tmp';
    this.csv = fs.openSync(this.csvTmp, 'w');
    this.ev = fs.openSync(this.evTmp, 'w');
    fs.writeSync(this.csv, 'time_us,path_id,local,peer,active,cwnd,bytes_in_flight,smoothed_rtt,min_rtt,latest_rtt\n');
    this.pathIds = new Map();
    this.buf = [];
    this.rows = 0;
    this.events = 0;
    this.conn = conn;
  }
  pathId(local, peer) {
    const k = local + '|' + peer;
    let id = this.pathIds.get(k);
    if (id === undefined) {
      id = this.pathIds.size;
      this.pathIds.set(k, id);
    }
    return id;
  }
  sample() {
    if (!this.conn) return;
    let stats;
    try {
      stats = this.conn.pathStats();
    } catch (e) {
      return;
    }
    const t = nowUs();
    for (const s of stats) {
      const l = hp(s.localHost);
      const p = hp(s.peerHost);
      const id = this.pathId(l, p);
      this.buf.push(`${t},${id},${l},${p},${s.active ? 1 : 0},${s.cwnd},,${s.rtt * 1000},,\n`);
      this.rows++;
      this.last = this.last || new Map();
      this.last.set(id, s);
    }
    if (this.buf.length > 256) this.flush();
  }
  event(obj) {
    const line = JSON.stringify(Object.assign({ time_us: nowUs() }, obj),
      (k, v) => (typeof v === 'bigint' ? Number(v) : v));
    fs.writeSync(this.ev, line + '\n');
    this.events++;
  }
  flush() {
    if (this.buf.length) fs.writeSync(this.csv, this.buf.join(''));
    this.buf = [];
  }
  close(meta) {
    this.flush();
    fs.fsyncSync(this.csv);
    fs.fsyncSync(this.ev);
    fs.closeSync(this.csv);
    fs.closeSync(this.ev);
    fs.renameSync(this.csvTmp, this.base + '.csv');
    fs.renameSync(this.evTmp, this.base + '.events.jsonl');
    const final = [];
    if (this.last) {
      for (const [id, s] of this.last) {
        final.push({
          path_id: id, local: hp(s.localHost), peer: hp(s.peerHost), active: s.active,
          recv: s.recv, sent: s.sent, lost: s.lost, retrans: s.retrans, rtt_ms: s.rtt,
          cwnd: s.cwnd, sent_bytes: s.sentBytes, recv_bytes: s.recvBytes,
          lost_bytes: s.lostBytes, pmtu: s.pmtu, delivery_rate: s.deliveryRate,
        });
      }
    }
    const m = Object.assign({
      role: this.role,
      reference_unix_us: t0Unix,
      sample_interval_ms: SAMPLE_MS,
      binding: BINDING,
      binding_version: require('@matrixai/quic-linux-x64/package.json').version,
      quiche_version: '0.18.0',
      rtt_resolution_us: 1000,
      unavailable_columns: ['bytes_in_flight', 'min_rtt', 'latest_rtt'],
      rows: this.rows,
      events: this.events,
      final_path_stats: final,
    }, meta);
    const tmp = this.base + '.meta.json.tmp';
    fs.writeFileSync(tmp, JSON.stringify(m, (k, v) => (typeof v === 'bigint' ? Number(v) : v), 2) + '\n');
    fs.renameSync(tmp, this.base + '.meta.json');
  }
}

function eventRecord(ev) {
  switch (ev.type) {
    case 'New':
    case 'Validated':
    case 'FailedValidation':
    case 'Closed':
      return { event: ev.type, local: hp(ev.local), peer: hp(ev.peer) };
    case 'PeerMigrated':
      // quiche::PathEvent::PeerMigrated(local, peer): the server's local
      // address and the peer's new address.
      return { event: ev.type, local: hp(ev.old), peer: hp(ev.new) };
    case 'ReusedSourceConnectionId':
      return {
        event: ev.type, seq: ev.seq,
        local: hp(ev.new[0]), peer: hp(ev.new[1]),
        old_local: hp(ev.old[0]), old_peer: hp(ev.old[1]),
      };
    default:
      return { event: String(ev.type), raw: ev };
  }
}

function makeConfig(args, isServer) {
  let cfg;
  if (isServer) {
    // The throwaway key and certificate come from the environment (the Go
    // wrapper generates them per repetition) or from files for manual runs;
    // nothing key-like is written next to the results.
    const cert = process.env.MIGAUDIT_QUICHE_CERT_PEM
      ? Buffer.from(process.env.MIGAUDIT_QUICHE_CERT_PEM) : fs.readFileSync(args.cert);
    const key = process.env.MIGAUDIT_QUICHE_KEY_PEM
      ? Buffer.from(process.env.MIGAUDIT_QUICHE_KEY_PEM) : fs.readFileSync(args.key);
    cfg = quiche.Config.withBoringSslCtx(false, false, null, [key], [cert], null);
  } else {
    cfg = quiche.Config.withBoringSslCtx(false, false, null, null, null, null);
  }
  cfg.verifyPeer(false);
  cfg.setApplicationProtos([ALPN]);
  cfg.setMaxIdleTimeout(Number(args['idle-timeout-ms'] || 10000));
  cfg.setMaxRecvUdpPayloadSize(1350);
  cfg.setMaxSendUdpPayloadSize(Number(args['max-send-udp-payload'] || 1200));
  cfg.setInitialMaxData(25165824);
  cfg.setInitialMaxStreamDataBidiLocal(16777216);
  cfg.setInitialMaxStreamDataBidiRemote(16777216);
  cfg.setInitialMaxStreamDataUni(1048576);
  cfg.setInitialMaxStreamsBidi(16);
  cfg.setInitialMaxStreamsUni(16);
  cfg.setActiveConnectionIdLimit(8);
  cfg.setDisableActiveMigration(false);
  cfg.setCcAlgorithmName(args.cc || 'cubic');
  if (args.keylog) cfg.logKeys();
  // quiche stamps each packet's time_sent with the pacer's release time
  // (SendInfo.at). The binding hands `at` to JavaScript as an opaque
  // External, so the harness cannot wait for it; with pacing on, packets
  // leave before their recorded send time and every RTT sample comes out
  // too small. Pacing is therefore off unless --pacing 1.
  cfg.enablePacing(args.pacing === '1');
  return cfg;
}

class Endpoint {
  constructor(role, rec) {
    this.role = role;
    this.rec = rec;
    this.sockets = new Map(); // "ip:port" -> dgram socket
    this.conn = null;
    this.timer = null;
    this.sendBuf = Buffer.alloc(1500);
    this.sentByLocal = new Map();
    this.recvByLocal = new Map();
    this.closed = false;
    this.onClosed = null;
  }
  bind(local) {
    return new Promise((resolve, reject) => {
      const s = dgram.createSocket({ type: 'udp4', recvBufferSize: 8 << 20, sendBufferSize: 8 << 20 });
      s.once('error', reject);
      s.bind(local.port, local.host, () => {
        s.removeListener('error', reject);
        s.on('error', (e) => this.rec.event({ event: 'harness', what: 'socket-error', local: hp(local), error: String(e) }));
        const addr = s.address();
        const l = { host: addr.address, port: addr.port };
        this.sockets.set(hp(l), s);
        s.on('message', (msg, rinfo) => this.onMessage(msg, rinfo, l));
        resolve(l);
      });
    });
  }
  onMessage(msg, rinfo, local) {
    const k = hp(local);
    this.recvByLocal.set(k, (this.recvByLocal.get(k) || 0) + 1);
    if (!this.conn) {
      if (this.role === 'server') this.accept(msg, rinfo, local);
      if (!this.conn) return;
    }
    const to = this.recvTo ? this.recvTo(local) : local;
    try {
      this.conn.recv(msg, { from: { host: rinfo.address, port: rinfo.port }, to });
    } catch (e) {
      // quiche drops undecryptable / stray packets with an error; keep going.
    }
    this.afterIO();
  }
  accept(msg, rinfo, local) {
    let hdr;
    try {
      hdr = quiche.Header.fromSlice(msg, quiche.MAX_CONN_ID_LEN);
    } catch (e) {
      return;
    }
    if (hdr.ty !== quiche.Type.Initial) return;
    const scid = crypto.randomBytes(quiche.MAX_CONN_ID_LEN);
    this.conn = quiche.Connection.accept(scid, null, local, { host: rinfo.address, port: rinfo.port }, this.config);
    // TLS secrets in the NSS key log format, for decrypting the wire capture
    // (Config.logKeys is set in makeConfig when --keylog is given).
    if (this.keylog) this.conn.setKeylog(this.keylog);
    this.rec.conn = this.conn;
    this.rec.event({ event: 'harness', what: 'accepted', local: hp(local), peer: `${rinfo.address}:${rinfo.port}` });
    this.startSampling();
  }
  startSampling() {
    this.sampler = setInterval(() => this.rec.sample(), SAMPLE_MS);
    this.rec.sample();
  }
  issueCids() {
    if (!this.conn.isEstablished()) return;
    let guard = 0;
    while (this.conn.sourceCidsLeft() > 0 && guard++ < 8) {
      const cid = crypto.randomBytes(quiche.MAX_CONN_ID_LEN);
      const token = BigInt('0x' + crypto.randomBytes(16).toString('hex'));
      try {
        this.conn.newSourceCid(cid, token, false);
      } catch (e) {
        break;
      }
    }
  }
  drainEvents() {
    for (;;) {
      let ev;
      try {
        ev = this.conn.pathEventNext();
      } catch (e) {
        break;
      }
      if (ev == null) break;
      const r = eventRecord(ev);
      this.rec.event(r);
      if (this.onPathEvent) this.onPathEvent(r);
    }
  }
  flush() {
    for (;;) {
      let res;
      try {
        res = this.conn.send(this.sendBuf);
      } catch (e) {
        break; // Done
      }
      if (res == null) break;
      const [n, info] = res;
      if (n <= 0) continue;
      const k = this.route ? this.route(hp(info.from)) : hp(info.from);
      let s = this.sockets.get(k);
      if (!s) {
        // Fall back to a wildcard-bound socket with the same port, if any.
        s = this.sockets.get(`0.0.0.0:${info.from.port}`);
      }
      if (!s) {
        this.rec.event({ event: 'harness', what: 'no-socket-for-from', local: k, peer: hp(info.to) });
        continue;
      }
      this.sentByLocal.set(k, (this.sentByLocal.get(k) || 0) + 1);
      s.send(Buffer.from(this.sendBuf.subarray(0, n)), info.to.port, info.to.host);
    }
  }
  afterIO() {
    if (!this.conn) return;
    this.drainEvents();
    if (this.conn.isEstablished()) this.issueCids();
    if (this.app) this.app();
    this.flush();
    this.armTimer();
    if (this.conn.isClosed()) this.finish();
  }
  armTimer() {
    if (this.timer) clearTimeout(this.timer);
    const t = this.conn.timeout();
    if (t == null) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.conn.onTimeout();
      this.afterIO();
    }, Math.max(0, Number(t)));
  }
  finish() {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.sampler) clearInterval(this.sampler);
    this.rec.sample();
    for (const s of this.sockets.values()) s.close();
    if (this.onClosed) this.onClosed();
  }
}

// ---------- server ----------
async function runServer(args) {
  const base = args.out;
  const rec = new Recorder(base, 'server', null);
  const ep = new Endpoint('server', rec);
  ep.config = makeConfig(args, true);
  ep.keylog = args.keylog || '';
  const listen = await ep.bind(parseHostPort(args.listen, 'listen'));
  const bodyBytes = Number(args['body-bytes'] || 1 << 30);
  const chunk = Buffer.alloc(65536, 0x61);
  let sent = 0;
  let requested = false;
  let finSent = false;
  const reqBuf = Buffer.alloc(4096);
  ep.app = () => {
    const c = ep.conn;
    if (!c.isEstablished()) return;
    for (const sid of c.readable()) {
      for (;;) {
        let r;
        try {
          r = c.streamRecv(sid, reqBuf);
        } catch (e) {
          break;
        }
        if (r == null) break;
        requested = true;
        ep.streamId = sid;
        if (r[1]) break;
      }
    }
    if (!requested || finSent) return;
    for (;;) {
      const left = bodyBytes - sent;
      const n = Math.min(left, chunk.length);
      let w;
      try {
        w = c.streamSend(ep.streamId, n === chunk.length ? chunk : chunk.subarray(0, n), n === left);
      } catch (e) {
        break; // Done: no capacity
      }
      if (w == null || w <= 0) {
        if (n === 0 && w === 0) finSent = true;
        break;
      }
      sent += w;
      if (sent >= bodyBytes) {
        finSent = true;
        break;
      }
      if (w < n) break;
    }
  };
  process.stdout.write(JSON.stringify({ ready: true, listen: hp(listen) }) + '\n');
  const killTimer = setTimeout(() => {
    rec.event({ event: 'harness', what: 'server-deadline' });
    if (ep.conn) {
      try { ep.conn.close(true, 0, Buffer.from('deadline')); } catch (e) { /* already closing */ }
      ep.afterIO();
    }
    setTimeout(() => ep.finish(), 500);
  }, Number(args['deadline-ms'] || 120000));
  await new Promise((resolve) => { ep.onClosed = resolve; });
  clearTimeout(killTimer);
  rec.close({
    listen: hp(listen),
    cc: args.cc || 'cubic',
    body_bytes_sent: sent,
    stats: ep.conn ? ep.conn.stats() : null,
    datagrams_sent_by_local: Object.fromEntries(ep.sentByLocal),
    datagrams_received_by_local: Object.fromEntries(ep.recvByLocal),
    peer_error: ep.conn ? errJSON(ep.conn.peerError()) : null,
    local_error: ep.conn ? errJSON(ep.conn.localError()) : null,
  });
}

// ---------- client ----------
// Scenarios (--mode):
//   migrate      probePath(local-b, server), wait for Validated, migrate().
//                With --back-after-ms, later return to local-a the same way.
//                Port-only rebinding is this mode with local-b on local-a's IP.
//   nat-rebind   the client's quiche never learns of a move: from
//                --migrate-at-ms on, every datagram quiche sends "from
//                local-a" leaves through the local-b socket, and datagrams
//                arriving on local-b are handed to quiche as if addressed to
//                local-a — what a NAT rebinding looks like to the server.
async function runClient(args) {
  const base = args.out;
  const server = parseHostPort(args.server, 'server');
  const rec = new Recorder(base, 'client', null);
  const ep = new Endpoint('client', rec);
  const cfg = makeConfig(args, false);
  const localA = await ep.bind(parseHostPort(args['local-a'], 'local-a'));
  const localB = await ep.bind(parseHostPort(args['local-b'], 'local-b'));
  const mode = args.mode || 'migrate';
  if (mode !== 'migrate' && mode !== 'nat-rebind') throw new Error(`--mode ${mode}: want migrate or nat-rebind`);
  const migrateAt = Number(args['migrate-at-ms'] || 5000);
  const backAfter = Number(args['back-after-ms'] || 0);
  const duration = Number(args['duration-ms'] || 15000);
  const scid = crypto.randomBytes(quiche.MAX_CONN_ID_LEN);
  ep.conn = quiche.Connection.connect('migaudit.invalid', scid, localA, server, cfg);
  rec.conn = ep.conn;
  rec.event({ event: 'harness', what: 'connect', local: hp(localA), peer: hp(server) });
  ep.startSampling();

  let received = 0;
  let fin = false;
  let requested = false;
  let established = null;
  const rbuf = Buffer.alloc(65536);
  const streamId = 0;
  const pending = new Map(); // "local|peer" -> [local, peer] to migrate to once validated
  const moves = [];

  if (mode === 'nat-rebind') {
    const kA = hp(localA);
    const kB = hp(localB);
    ep.route = (from) => (ep.rebound && from === kA ? kB : from);
    ep.recvTo = (local) => (ep.rebound && hp(local) === kB ? localA : local);
  }

  const migrate = (local, why) => {
    try {
      ep.conn.migrate(local, server);
      moves.push({ time_us: nowUs(), unix_us: t0Unix + nowUs(), from: ep.current, to: hp(local), evidence: `${why}; local address now ${hp(local)}` });
      rec.event({ event: 'harness', what: 'migrate', local: hp(local), peer: hp(server) });
      ep.current = hp(local);
    } catch (e) {
      rec.event({ event: 'harness', what: 'migrate-failed', local: hp(local), peer: hp(server), error: String(e) });
    }
  };
  ep.current = hp(localA);

  const probe = (local) => {
    if (ep.closed) return;
    if (mode === 'nat-rebind') {
      ep.rebound = true;
      moves.push({ time_us: nowUs(), unix_us: t0Unix + nowUs(), from: hp(localA), to: hp(localB), evidence: `harness rebinding (quiche not told): datagrams quiche sends from ${hp(localA)} leave through the socket bound to ${hp(localB)}; local address now ${hp(localB)}` });
      rec.event({ event: 'harness', what: 'nat-rebind', local: hp(localB), peer: hp(server) });
      ep.afterIO();
      return;
    }
    let known = false;
    try {
      known = ep.conn.isPathValidated(local, server);
    } catch (e) {
      known = false; // no such path yet
    }
    if (known) {
      // Returning to a path quiche already validated (migrate-back): quiche
      // keeps that path object, and probing it again emits no new
      // Validated event, so migrate to it directly.
      rec.event({ event: 'harness', what: 'path-already-validated', local: hp(local), peer: hp(server) });
      migrate(local, `conn.migrate(${hp(local)}, ${hp(server)}) to the already-validated path (isPathValidated = true)`);
      ep.afterIO();
      return;
    }
    try {
      ep.conn.probePath(local, server);
      rec.event({ event: 'harness', what: 'probe', local: hp(local), peer: hp(server) });
      pending.set(hp(local) + '|' + hp(server), local);
    } catch (e) {
      // The path is already known to quiche (returning to path A keeps the
      // validated path object): migrate to it directly.
      rec.event({ event: 'harness', what: 'probe-failed', local: hp(local), peer: hp(server), error: String(e) });
      migrate(local, `conn.migrate(${hp(local)}, ${hp(server)}) to an already-validated path (probePath: ${e.message || e})`);
    }
    ep.afterIO();
  };

  ep.onPathEvent = (r) => {
    if (r.event !== 'Validated') return;
    const k = r.local + '|' + r.peer;
    const local = pending.get(k);
    if (!local) return;
    pending.delete(k);
    migrate(local, `conn.migrate(${hp(local)}, ${hp(server)}) after PathEvent::Validated`);
    if (backAfter > 0 && local === localB) setTimeout(() => probe(localA), backAfter);
  };

  ep.app = () => {
    const c = ep.conn;
    if (!c.isEstablished()) return;
    if (established == null) {
      established = nowUs();
      rec.event({ event: 'harness', what: 'established' });
      setTimeout(() => probe(localB), migrateAt);
    }
    if (!requested) {
      c.streamSend(streamId, Buffer.from('GET /body\r\n'), true);
      requested = true;
    }
    for (const sid of c.readable()) {
      for (;;) {
        let r;
        try {
          r = c.streamRecv(sid, rbuf);
        } catch (e) {
          break;
        }
        if (r == null) break;
        received += r[0];
        if (r[1]) {
          fin = true;
          break;
        }
      }
    }
  };

  ep.afterIO();
  process.stdout.write(JSON.stringify({ ready: true, local_a: hp(localA), local_b: hp(localB) }) + '\n');
  const progress = setInterval(() => {
    process.stdout.write(JSON.stringify({ progress: received }) + '\n');
  }, 250);

  let stopping = false;
  const stop = (what) => {
    if (stopping) return;
    stopping = true;
    rec.event({ event: 'harness', what, received });
    try { ep.conn.close(true, 0, Buffer.from('done')); } catch (e) { /* already closing */ }
    ep.afterIO();
    setTimeout(() => ep.finish(), 3000);
  };
  const stopTimer = setTimeout(() => stop('duration-elapsed'), duration);
  const finWatch = setInterval(() => { if (fin) stop('body-complete'); }, 20);
  await new Promise((resolve) => { ep.onClosed = resolve; });
  clearTimeout(stopTimer);
  clearInterval(finWatch);
  clearInterval(progress);
  process.stdout.write(JSON.stringify({ progress: received, done: true, complete: fin }) + '\n');
  rec.close({
    mode,
    server: hp(server),
    local_a: hp(localA),
    local_b: hp(localB),
    cc: args.cc || 'cubic',
    established_us: established,
    migrate_at_ms: migrateAt,
    back_after_ms: backAfter,
    moves,
    body_bytes_received: received,
    body_complete: fin,
    stats: ep.conn.stats(),
    datagrams_sent_by_local: Object.fromEntries(ep.sentByLocal),
    datagrams_received_by_local: Object.fromEntries(ep.recvByLocal),
    peer_error: errJSON(ep.conn.peerError()),
    local_error: errJSON(ep.conn.localError()),
  });
}

function errJSON(e) {
  if (!e) return null;
  return { is_app: e.isApp, error_code: e.errorCode, reason: Buffer.from(e.reason || []).toString('utf8') };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const role = args._[0];
  if (!args.out) throw new Error('missing --out BASE');
  fs.mkdirSync(path.dirname(path.resolve(args.out)), { recursive: true });
  if (role === 'server') await runServer(args);
  else if (role === 'client') await runClient(args);
  else throw new Error(`unknown role ${JSON.stringify(role)}: want server or client`);
}

main().then(() => process.exit(0), (e) => {
  process.stderr.write(`quiche harness: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
