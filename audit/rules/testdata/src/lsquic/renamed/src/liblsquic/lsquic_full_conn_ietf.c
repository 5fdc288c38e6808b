/* switch_path_to renamed */
static void
switch_path_to_v2 (struct ietf_full_conn *conn, unsigned char path_id)
{
    conn->ifc_cur_path_id = path_id;
}
