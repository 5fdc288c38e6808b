xqc_int_t
xqc_process_path_response_frame(xqc_connection_t *conn, xqc_packet_in_t *packet_in)
{
    if (path->rebinding_addrlen != 0) {
        xqc_memcpy(path->peer_addr, path->rebinding_addr, path->rebinding_addrlen);
    }
    xqc_path_validate(path);
    return XQC_OK;
}
