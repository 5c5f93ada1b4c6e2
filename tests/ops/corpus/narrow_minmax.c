/* Min and max over narrow integer types (promoted to int on compare) and
 * the comparisons of signed against unsigned after conversion. */
#include <stdint.h>
#include "cad_op.h"

struct nar {
	uint8_t umax;
	int8_t smin;
	uint16_t hmin;
	int16_t hmax;
	uint32_t mixed;
};

CAD_OP(commutative)
void narrow_minmax(const struct nar *in, struct nar *inout)
{
	uint8_t a = in->umax > inout->umax ? in->umax : inout->umax;
	int8_t b = in->smin < inout->smin ? in->smin : inout->smin;
	uint16_t c = in->hmin < inout->hmin ? in->hmin : inout->hmin;
	int16_t d = in->hmax > inout->hmax ? in->hmax : inout->hmax;
	uint32_t e = (int32_t)in->mixed < 0 ? in->mixed : (in->mixed > inout->mixed ? in->mixed : inout->mixed);
	inout->umax = a;
	inout->smin = b;
	inout->hmin = c;
	inout->hmax = d;
	inout->mixed = e;
}
