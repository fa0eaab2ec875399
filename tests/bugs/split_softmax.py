from tests.bugs import Bug

BUGS = [
    # merge_stats adds the chunks' sums as they are: each was taken relative to its own max.
    Bug("merge_without_rescaling", find="s_acc += s * tl.exp2((m - m_row) * LOG2E)",
        replace="s_acc += s",
        check="stats.merge", hint="partial denominators not rescaled"),
    # normalize shifts by the chunk's own max, so chunks of one row are scaled differently.
    Bug("normalize_chunk_local_max", find="y = tl.exp2((x - m_row) * LOG2E) * inv_s",
        replace="y = tl.exp2((x - tl.max(x, axis=0)) * LOG2E) * inv_s",
        check="normalize.values", hint="chunk-local max"),
    # normalize reads every row's denominator at row 0's offset: row 0 right, the rest scaled.
    Bug("normalize_row0_denominator", find="s_row = tl.load(s_row_ptr + row)",
        replace="s_row = tl.load(s_row_ptr)",
        check="normalize.values", hint="another row's statistics"),
    # The partial statistics mask the chunk grid instead of the row: the last chunk of a
    # ragged row reads past the row (the next row's values, or past the end of x).
    Bug("last_chunk_unmasked", find="mask = cols < n_cols  # the last chunk",
        replace="mask = cols < n_chunks * CHUNK  # the last chunk",
        check="stats.partial", hint="tail not masked"),
    # The merge walks rows with the column stride: row r reads row 0's states shifted by r.
    Bug("merge_reads_another_row", find="m_row_start = m_ptr + row * stride_mm",
        replace="m_row_start = m_ptr + row * stride_mc",
        check="stats.merge", hint="another row's statistics"),
    # No guard for a chunk of only -inf: exp(-inf - (-inf)) = NaN poisons the row.
    Bug("masked_chunk_nan", find='m_shift = tl.where(m == -float("inf"), 0.0, m)',
        replace="m_shift = m", check="forward.extreme", hint="a chunk of only -inf"),
    # The launcher no longer validates chunk: a bad chunk reaches Triton (or divides by 0).
    Bug("chunk_not_validated",
        find='        check_power_of_two("chunk", chunk, MIN_CHUNK, MAX_CHUNK)\n',
        replace="        pass\n", check="bad_calls", hint="refuse bad calls"),
    # default_chunk trusts its SM count: sm_count=0 divides by zero instead of a ValueError.
    Bug("sm_count_not_validated",
        find='    check_int_range("sm_count", sm_count, 1, _MAX_COUNT)\n', replace="",
        check="bad_calls", hint="refuse bad calls"),
]
