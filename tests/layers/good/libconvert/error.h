#ifndef LC_ERROR_H
#define LC_ERROR_H
int lc_fail(int code);
#endif
