int lc_pickle_op(int op);
