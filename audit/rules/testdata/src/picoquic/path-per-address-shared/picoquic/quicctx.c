/* Before tuples: one path object per address. */
int picoquic_create_path(picoquic_cnx_t* cnx, uint64_t start_time, const struct sockaddr* local_addr, const struct sockaddr* peer_addr)
{
    picoquic_path_t* path_x = (picoquic_path_t*)malloc(sizeof(picoquic_path_t));
    path_x->smoothed_rtt = PICOQUIC_INITIAL_RTT;
    path_x->cwin = PICOQUIC_CWIN_INITIAL;
    cnx->path[cnx->nb_paths++] = path_x;
    return cnx->nb_paths - 1;
}

void picoquic_promote_path_to_default(picoquic_cnx_t* cnx, int path_index, uint64_t current_time)
{
    if (path_index > 0 && path_index < cnx->nb_paths) {
        picoquic_path_t* path_x = cnx->path[path_index];
        if (cnx->congestion_alg != NULL) {
            cnx->congestion_alg->alg_init(path_x, current_time);
        }
        cnx->path[path_index] = cnx->path[0];
        cnx->path[0] = path_x;
    }
}
