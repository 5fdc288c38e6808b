/* a variant: the reset keeps the RTT estimator, the PATH_RESPONSE handler
   takes an RTT sample, the RTT sample sits behind the watermark */
static void conn_reset_conn_stat_cc(ngtcp2_conn *conn,
                                    ngtcp2_conn_stat *cstat) {
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
  ngtcp2_conn_update_rtt(conn, ts - pv->sent_ts, 0, ts);
  conn_reset_congestion_state(conn, ts);
  return 0;
}
