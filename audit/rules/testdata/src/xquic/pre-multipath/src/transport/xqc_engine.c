xqc_int_t
xqc_engine_packet_process(xqc_engine_t *engine,
    const unsigned char *packet_in_buf, size_t packet_in_size,
    const struct sockaddr *local_addr, socklen_t local_addrlen,
    const struct sockaddr *peer_addr, socklen_t peer_addrlen)
{
    if (engine->eng_type == XQC_ENGINE_SERVER
        && !xqc_is_same_addr(peer_addr, (struct sockaddr *)conn->peer_addr))
    {
        xqc_memcpy(conn->rebinding_addr, peer_addr, peer_addrlen);
        ret = xqc_conn_server_send_path_challenge(conn);
    }
    return ret;
}
