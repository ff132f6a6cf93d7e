/* libconvert/version.h */
#ifndef LC_LIBCONVERT_VERSION_H
#define LC_LIBCONVERT_VERSION_H
#define LC_VERSION "0.1.0"
#endif
