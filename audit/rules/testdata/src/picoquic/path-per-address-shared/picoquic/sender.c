/* A validated path becomes the default; picoquic_promote_path_to_default() in a comment is not a call. */
void picoquic_select_next_path(picoquic_cnx_t* cnx, uint64_t current_time)
{
    for (int i = 1; i < cnx->nb_paths; i++) {
        if (cnx->path[i]->challenge_verified) {
            picoquic_promote_path_to_default(cnx, i, current_time);
            break;
        }
    }
}
