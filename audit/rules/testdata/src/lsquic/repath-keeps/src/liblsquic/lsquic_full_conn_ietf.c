/* a variant: repath keeps RTT and CC, PATH_RESPONSE feeds rtt_stats */
static void
switch_path_to (struct ietf_full_conn *conn, unsigned char path_id)
{
    const int keep_path_properties = conn->ifc_settings->es_optimistic_nat
                                && only_peer_port_changed(conn, path_id);
    lsquic_send_ctl_repath(&conn->ifc_send_ctl,
        CUR_NPATH(conn), &conn->ifc_paths[path_id].cop_path,
        keep_path_properties);
}

static unsigned
process_path_response_frame (struct ietf_full_conn *conn,
                        struct lsquic_packet_in *packet_in,
                        const unsigned char *p, size_t len)
{
    path->cop_flags |= COP_VALIDATED;
    lsquic_rtt_stats_update(&conn->ifc_pub.rtt_stats, now - path->cop_sent, 0);
    if (conn->ifc_flags & IFC_SERVER)
        return parsed_len;
    else
        switch_path_to(conn, path_id);
    return parsed_len;
}

static int
try_to_begin_migration (struct ietf_full_conn *conn,
                                            const struct transport_params *params)
{
    if (!conn->ifc_settings->es_allow_migration)
        return -1;
    return 0;
}

static void
on_new_or_unconfirmed_path (struct ietf_full_conn *conn,
                                        const struct lsquic_packet_in *packet_in)
{
    if (packet_in->pi_flags & PI_VALIDATED)
        switch_path_to(conn, packet_in->pi_path_id);
}
