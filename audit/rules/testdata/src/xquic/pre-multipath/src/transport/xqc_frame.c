xqc_int_t
xqc_process_path_response_frame(xqc_connection_t *conn, xqc_packet_in_t *packet_in)
{
    if (memcmp(conn->path_challenge_data, path_response_data, XQC_PATH_CHALLENGE_DATA_LEN) == 0) {
        xqc_memcpy(conn->peer_addr, conn->rebinding_addr, conn->rebinding_addrlen);
        conn->peer_addrlen = conn->rebinding_addrlen;
    }
    return XQC_OK;
}
