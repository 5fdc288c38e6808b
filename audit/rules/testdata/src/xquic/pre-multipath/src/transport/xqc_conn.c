/* shape of xquic before multipath (1.3 and earlier): active migration always disabled, one send controller per connection */
static void
xqc_conn_init_trans_settings(xqc_connection_t *conn)
{
    ls->disable_active_migration = 1;
}

xqc_connection_t *
xqc_conn_create(xqc_engine_t *engine, xqc_cid_t *dcid, xqc_cid_t *scid, const xqc_conn_settings_t *settings)
{
    xc->conn_send_ctl = xqc_send_ctl_create(xc);
    return xc;
}
