/* SPDX-License-Identifier: MIT */
/* Version string and error descriptions. */
#include <mmport/common.h>

const char *mmp_version(void)
{
    return MMP_VERSION_STRING;
}

const char *mmp_strerror(int err)
{
    switch (err < 0 ? -err : err) {
    case 0:
        return "success";
    case MMP_ENOENT:
        return "nothing mapped there";
    case MMP_EINTR:
        return "cancelled by callback";
    case MMP_EAGAIN:
        return "entry being changed by another writer (nothing changed; retry)";
    case MMP_EIO:
        return "corrupted table (reserved descriptor or cycle); nothing changed";
    case MMP_ENOMEM:
        return "out of memory (nothing changed)";
    case MMP_EACCES:
        return "access not allowed";
    case MMP_EBUSY:
        return "busy";
    case MMP_EEXIST:
        return "already mapped";
    case MMP_EINVAL:
        return "invalid argument";
    case MMP_ERANGE:
        return "address beyond the input or output address bits";
    case MMP_ENOSYS:
        return "not built in";
    case MMP_EOVERFLOW:
        return "size overflow";
    case MMP_ENOTSUP:
        return "not supported by this format, configuration or table mode";
    default:
        return "unknown error";
    }
}
