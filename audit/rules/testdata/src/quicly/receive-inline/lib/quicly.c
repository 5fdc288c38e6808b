/* shape of quicly between #554 (2024-05) and do_receive: the client's address check inline in quicly_receive */
static int promote_path(quicly_conn_t *conn, size_t path_index)
{
    { /* mark all packets as lost, as it is unlikely that packets sent on the old path wound be acknowledged */
        while ((sent = quicly_sentmap_get(&iter))->packet_number != UINT64_MAX) {
            if ((ret = quicly_sentmap_update(&conn->egress.loss.sentmap, &iter, QUICLY_SENTMAP_EVENT_PTO)) != 0)
                return ret;
        }
    }

    /* reset CC */
    conn->egress.cc.type->cc_init->cb(conn->egress.cc.type->cc_init, &conn->egress.cc, initcwnd, conn->stash.now);

    /* reset RTT estimate, adopting SRTT of the original path as initial RTT (TODO calculate RTT based on path challenge RT) */
    quicly_rtt_init(&conn->egress.loss.rtt, &conn->super.ctx->loss,
                    conn->egress.loss.rtt.smoothed < conn->super.ctx->loss.default_initial_rtt
                        ? conn->egress.loss.rtt.smoothed
                        : conn->super.ctx->loss.default_initial_rtt);

    conn->egress.pn_path_start = conn->egress.packet_number;
    return 0;
}

static int notify_congestion_to_cc(quicly_conn_t *conn, uint16_t lost_bytes, uint64_t lost_pn)
{
    if (conn->egress.pn_path_start <= lost_pn) {
        conn->egress.cc.type->cc_on_lost(&conn->egress.cc, &conn->egress.loss, lost_bytes, lost_pn);
    }
    return 0;
}

static int handle_ack_frame(quicly_conn_t *conn, struct st_quicly_handle_payload_state_t *state)
{
    if (conn->egress.pn_path_start <= pn_acked) {
        largest_newly_acked.pn = pn_acked;
    }
    return 0;
}

int quicly_receive(quicly_conn_t *conn, struct sockaddr *dest_addr, struct sockaddr *src_addr, quicly_decoded_packet_t *packet)
{
    if (quicly_is_client(conn)) {
        if (compare_socket_address(src_addr, &conn->paths[0]->address.remote.sa) != 0) {
            ret = QUICLY_ERROR_PACKET_IGNORED;
            goto Exit;
        }
    }
    if (path_index != 0 && conn->paths[path_index]->path_challenge.send_at == INT64_MAX) {
        if ((ret = promote_path(conn, path_index)) != 0)
            goto Exit;
    }
Exit:
    return ret;
}
