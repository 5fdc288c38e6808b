xqc_send_ctl_t *
xqc_send_ctl_create(xqc_connection_t *conn)
{
    send_ctl->ctl_srtt = XQC_kInitialRtt * 1000;
    send_ctl->ctl_cong_callback = &xqc_cubic_cb;
    return send_ctl;
}

void
xqc_send_ctl_reset(xqc_send_ctl_t *send_ctl)
{
    send_ctl->ctl_srtt = XQC_kInitialRtt * 1000;
}

/* Retry: the server asked us to start over */
static xqc_int_t
xqc_conn_on_retry(xqc_connection_t *conn)
{
    xqc_send_ctl_reset(conn->conn_send_ctl);
    return XQC_OK;
}
