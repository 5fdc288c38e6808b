/* synthetic fixture: congestion accounting and (unlike upstream) the RTT
 * sample are both behind the cc_pkt_num watermark */
int ngtcp2_rtb_recv_ack(ngtcp2_rtb *rtb, const ngtcp2_ack *fr, ngtcp2_conn *conn) {
  for (; ent; ent = next) {
    if (ent->hd.pkt_num >= rtb->cc_pkt_num) {
      cc_ack.bytes_delivered += ent->pktlen;
    }
  }
  if (cc_ack.largest_pkt_sent_ts != UINT64_MAX && largest_pkt_num >= rtb->cc_pkt_num) {
    ngtcp2_conn_update_rtt(conn, cc_ack.rtt, fr->ack_delay_unscaled, ts);
  }
  return 0;
}
