/* shape of ngtcp2's connection: the reset on every path change */
static void conn_reset_conn_stat_cc(ngtcp2_conn *conn,
                                    ngtcp2_conn_stat *cstat) {
  cstat->latest_rtt = 0;
  cstat->min_rtt = UINT64_MAX;
  cstat->smoothed_rtt = conn->local.settings.initial_rtt;
  cstat->rttvar = conn->local.settings.initial_rtt / 2;
  cstat->first_rtt_sample_ts = UINT64_MAX;
  cstat->cwnd =
      ngtcp2_cc_compute_initcwnd(conn->local.settings.max_tx_udp_payload_size);
  cstat->bytes_in_flight = 0;
}

static void conn_reset_congestion_state(ngtcp2_conn *conn, ngtcp2_tstamp ts) {
  conn_reset_conn_stat_cc(conn, &conn->cstat);
  ngtcp2_rtb_reset_cc_state(&conn->pktns.rtb, conn->pktns.tx.last_pkt_num + 1);
}

static int conn_recv_path_response(ngtcp2_conn *conn, ngtcp2_path_response *fr,
                                   ngtcp2_tstamp ts) {
  assert(!conn->server);
  if (!pv) {
    return 0;
  }
  conn_reset_congestion_state(conn, ts);
  return 0;
}

static int conn_recv_non_probing_pkt_on_new_path(ngtcp2_conn *conn,
                                                 const ngtcp2_path *path,
                                                 ngtcp2_tstamp ts) {
  assert(conn->server);
  conn_reset_congestion_state(conn, ts);
  return 0;
}

static int conn_on_retry(ngtcp2_conn *conn, ngtcp2_tstamp ts) {
  conn_reset_congestion_state(conn, ts);
  return 0;
}

void ngtcp2_settings_default_versioned(ngtcp2_settings *settings) {
  settings->max_tx_udp_payload_size = 1500 - 48;
}
