/* shape of xquic: no active migration without multipath; the server folds a new peer address into the same path */
const xqc_conn_settings_t default_conn_settings = {
    .enable_multipath = 0,
};

static void
xqc_conn_init_trans_settings(xqc_connection_t *conn)
{
    ls->disable_active_migration = !ls->enable_multipath_allowed;
}
