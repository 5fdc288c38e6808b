/* conn_reset_congestion_state renamed */
static void conn_reset_congestion_state_v2(ngtcp2_conn *conn, ngtcp2_tstamp ts) {
  conn->cstat.cwnd = 0;
}
