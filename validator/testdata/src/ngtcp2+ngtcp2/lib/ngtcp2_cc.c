/* synthetic fixture */
uint64_t ngtcp2_cc_compute_initcwnd(size_t max_udp_payload_size) {
  size_t n = ngtcp2_max(2 * max_udp_payload_size, 14720);
  return ngtcp2_min(10 * max_udp_payload_size, n);
}
