static void
take_rtt_sample (lsquic_send_ctl_t *ctl,
                 lsquic_time_t now, lsquic_time_t lack_delta)
{
    if (packno > ctl->sc_max_rtt_packno && lack_delta < measured_rtt)
    {
        lsquic_rtt_stats_update(&ctl->sc_conn_pub->rtt_stats, measured_rtt, lack_delta);
    }
}

static void
send_ctl_loss_event (struct lsquic_send_ctl *ctl)
{
    ctl->sc_ci->cci_loss(CGP(ctl));
}

int
lsquic_send_ctl_got_ack (lsquic_send_ctl_t *ctl,
                         const struct ack_info *acki,
                         lsquic_time_t ack_recv_time, lsquic_time_t now)
{
    ctl->sc_ci->cci_ack(CGP(ctl), packet_out, packet_sz, now, app_limited);
    return 0;
}

void
lsquic_send_ctl_repath (struct lsquic_send_ctl *ctl,
    const struct network_path *old, const struct network_path *new,
    int keep_path_properties)
{
    TAILQ_FOREACH(packet_out, &ctl->sc_unacked_packets[pns], po_next)
        if (packet_out->po_path == old)
            packet_out->po_path = new;
    if (keep_path_properties)
        LSQ_DEBUG("keeping path properties: MTU, RTT, and CC state");
    else
    {
        memset(&ctl->sc_conn_pub->rtt_stats, 0,
                                        sizeof(ctl->sc_conn_pub->rtt_stats));
        ctl->sc_ci->cci_reinit(CGP(ctl));
    }
}
