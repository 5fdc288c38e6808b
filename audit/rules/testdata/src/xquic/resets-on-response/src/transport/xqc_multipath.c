void
xqc_path_validate(xqc_path_ctx_t *path)
{
    path->path_state = XQC_PATH_STATE_ACTIVE;
}
