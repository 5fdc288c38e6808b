typedef struct ngtcp2_rtb {
  /* cc_pkt_num is the smallest packet number that is contributed to
     ngtcp2_conn_stat.bytes_in_flight. */
  int64_t cc_pkt_num;
} ngtcp2_rtb;
