/* promote_path renamed */
static void promote_path_v2(quicly_conn_t *conn, size_t path_index)
{
    conn->paths[0] = conn->paths[path_index];
}
