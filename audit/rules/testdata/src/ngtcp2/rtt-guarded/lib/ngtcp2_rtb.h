typedef struct ngtcp2_rtb {
  int64_t cc_pkt_num;
} ngtcp2_rtb;
