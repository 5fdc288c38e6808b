/* no multipath yet: no xqc_path_validate */
