/* xqc_conn_init_trans_settings renamed */
void
xqc_conn_init_transport_settings(xqc_connection_t *conn)
{
    conn->local_settings.max_ack_delay = 25;
}
