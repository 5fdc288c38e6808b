static void rtb_on_remove(ngtcp2_rtb *rtb, ngtcp2_rtb_entry *ent,
                          ngtcp2_conn_stat *cstat) {
  if (rtb->cc_pkt_num <= ent->hd.pkt_num) {
    cstat->bytes_in_flight -= ent->pktlen;
  }
}

ngtcp2_ssize ngtcp2_rtb_recv_ack(ngtcp2_rtb *rtb, const ngtcp2_ack *fr,
                                 ngtcp2_conn_stat *cstat, ngtcp2_conn *conn,
                                 ngtcp2_tstamp ts) {
  if (largest_pkt_sent_ts != UINT64_MAX && ack_eliciting_pkt_acked) {
    rv = ngtcp2_conn_update_rtt(conn, cc_ack.rtt, fr->ack_delay_unscaled, ts);
  }
  for (ent = acked_ent; ent; ent = acked_ent) {
    if (ent->hd.pkt_num >= rtb->cc_pkt_num) {
      cc_ack.bytes_delivered += ent->pktlen;
    }
  }
  return 0;
}

void ngtcp2_rtb_reset_cc_state(ngtcp2_rtb *rtb, int64_t cc_pkt_num) {
  rtb->cc_pkt_num = cc_pkt_num;
}
