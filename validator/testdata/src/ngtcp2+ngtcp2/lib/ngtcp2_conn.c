/* synthetic fixture */
static void conn_reset_congestion_state(ngtcp2_conn *conn, ngtcp2_tstamp ts);

static void conn_reset_conn_stat_cc(ngtcp2_conn *conn,
                                    ngtcp2_conn_stat *cstat) {
  cstat->latest_rtt = 0;
  cstat->min_rtt = UINT64_MAX;
  cstat->smoothed_rtt = conn->local.settings.initial_rtt;
  cstat->rttvar = conn->local.settings.initial_rtt / 2;
  cstat->first_rtt_sample_ts = UINT64_MAX;
  cstat->cwnd = ngtcp2_cc_compute_initcwnd(cstat->max_tx_udp_payload_size);
  cstat->bytes_in_flight = 0;
}

static void a(ngtcp2_conn *conn, ngtcp2_tstamp ts) {
  conn_reset_congestion_state(conn, ts);
}

/*
 * conn_reset_congestion_state resets congestion state.
 */
static void conn_reset_congestion_state(ngtcp2_conn *conn, ngtcp2_tstamp ts) {
  conn_reset_conn_stat_cc(conn, &conn->cstat); ngtcp2_rtb_reset_cc_state(&conn->pktns.rtb, conn->pktns.tx.last_pkt_num + 1);
}

static int conn_recv_path_response(ngtcp2_conn *conn, ngtcp2_tstamp ts) {
  conn_reset_congestion_state(conn, ts);
  if (x) {
    conn_reset_congestion_state(conn, ts);
  }
  const char *s = "conn_reset_congestion_state(conn, ts)";
  conn_reset_congestion_state(conn, ts);
  conn_reset_congestion_state(conn, ts);
  conn_reset_congestion_state(conn, ts);
}
