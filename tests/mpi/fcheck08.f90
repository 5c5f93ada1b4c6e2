! fcheck08 - an ordinary Fortran 2008 MPI program (`use mpi_f08`; it knows
! nothing of cadrt) that runs every collective, blocking and non-blocking,
! on inputs each rank can compute for every other rank, and checks each
! result against one computed here from those inputs.  The non-blocking
! ones are completed by each member of the MPI_Wait family in turn, mixed
! with point-to-point requests, and the handles and statuses returned are
! checked; persistent ones (MPIX_*_init) are started twice.  (Open MPI's
! mpi_f08 reaches the library through other entry points than mpif.h, and
! its PMPI_ collectives through the same ones as its MPI_ collectives, so
! the reference is computed, not asked of MPI.)
!
!   mpif90 -o fcheck08 fcheck08.f90
!   mpirun -n P [-x LD_PRELOAD=libcadmpi.so] fcheck08
!
! Prints "fcheck08: ok (N checks)" at rank 0; exits 1 if a check failed.
program fcheck08
  use mpi_f08
  use mpi_f08_ext
  implicit none
  integer, parameter :: n = 700
  integer :: rank, nprocs, i, p, s, root, left, right, failures, checks, total
  integer :: idx, outcount, seen, indices(4)
  integer :: a(n), b(n), c(n), e(n), expect(n)
  integer, allocatable :: big(:), g(:), h(:), gexpect(:)
  double precision :: d(n), dexpect(n)
  type(MPI_Request) :: req, reqs(4), preqs(5)
  type(MPI_Status) :: status, statuses(4)
  logical :: flag

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  failures = 0
  checks = 0
  left = mod(rank + nprocs - 1, nprocs)
  right = mod(rank + 1, nprocs)
  allocate(big(n * nprocs), g(n * nprocs), h(n * nprocs), gexpect(n * nprocs))
  big = [(w(rank, i), i = 1, n * nprocs)]

  ! ---- blocking
  do root = 0, nprocs - 1, max(1, nprocs - 1)
    a = mine(rank)
    call MPI_Bcast(a, n, MPI_INTEGER, root, MPI_COMM_WORLD)
    call check(a, mine(root), 'MPI_Bcast')
    b = 0
    call MPI_Reduce(mine(rank), b, n, MPI_INTEGER, MPI_SUM, root, MPI_COMM_WORLD)
    if (rank == root) call check(b, total_of(), 'MPI_Reduce sum')
    g = 0
    call MPI_Gather(mine(rank), n, MPI_INTEGER, g, n, MPI_INTEGER, root, MPI_COMM_WORLD)
    if (rank == root) call check(g, gathered(), 'MPI_Gather')
    a = 0
    call MPI_Scatter(big, n, MPI_INTEGER, a, n, MPI_INTEGER, root, MPI_COMM_WORLD)
    call check(a, [(w(root, rank * n + i), i = 1, n)], 'MPI_Scatter')
  end do
  call MPI_Allreduce(mine(rank), a, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD)
  call check(a, max_of(), 'MPI_Allreduce max')
  d = dble(mine(rank)) / 4d0
  call MPI_Allreduce(MPI_IN_PLACE, d, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  dexpect = dble(total_of()) / 4d0
  checks = checks + 1
  if (any(d /= dexpect)) call fail('MPI_Allreduce double precision sum in place')
  call MPI_Allgather(mine(rank), n, MPI_INTEGER, g, n, MPI_INTEGER, MPI_COMM_WORLD)
  call check(g, gathered(), 'MPI_Allgather')
  call MPI_Alltoall(big, n, MPI_INTEGER, g, n, MPI_INTEGER, MPI_COMM_WORLD)
  call check(g, exchanged(), 'MPI_Alltoall')
  call MPI_Reduce_scatter_block(big, a, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  call check(a, scattered_sum(), 'MPI_Reduce_scatter_block')
  call MPI_Barrier(MPI_COMM_WORLD)

  ! ---- non-blocking, each set completed another way
  ! MPI_Ibcast by MPI_Wait, with a status
  root = nprocs - 1
  a = mine(rank)
  call MPI_Ibcast(a, n, MPI_INTEGER, root, MPI_COMM_WORLD, req)
  call MPI_Wait(req, status)
  call check(a, mine(root), 'MPI_Ibcast, MPI_Wait')
  call check_null(req, 'MPI_Wait')

  ! MPI_Iallreduce by MPI_Test, MPI_STATUS_IGNORE
  c = mine(rank)
  call MPI_Iallreduce(c, a, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req)
  flag = .false.
  do while (.not. flag)
    call MPI_Test(req, flag, MPI_STATUS_IGNORE)
  end do
  call check(a, total_of(), 'MPI_Iallreduce sum, MPI_Test')
  call check_null(req, 'MPI_Test')

  ! MPI_Ireduce and MPI_Igather with a ring of point-to-point messages, by
  ! MPI_Waitall: the receive's status names its source and tag
  a = 0
  b = -1
  g = 0
  c = mine(rank)
  call MPI_Ireduce(c, a, n, MPI_INTEGER, MPI_MAX, 0, MPI_COMM_WORLD, reqs(1))
  call MPI_Irecv(b, n, MPI_INTEGER, left, 77, MPI_COMM_WORLD, reqs(2))
  call MPI_Igather(c, n, MPI_INTEGER, g, n, MPI_INTEGER, 0, MPI_COMM_WORLD, reqs(3))
  call MPI_Isend(c, n, MPI_INTEGER, right, 77, MPI_COMM_WORLD, reqs(4))
  call MPI_Waitall(4, reqs, statuses)
  if (rank == 0) call check(a, max_of(), 'MPI_Ireduce max, MPI_Waitall')
  if (rank == 0) call check(g, gathered(), 'MPI_Igather, MPI_Waitall')
  call check(b, mine(left), 'point-to-point beside collectives, MPI_Waitall')
  checks = checks + 1
  if (statuses(2)%MPI_SOURCE /= left .or. statuses(2)%MPI_TAG /= 77) call fail('MPI_Waitall: the receive''s status')
  do i = 1, 4
    call check_null(reqs(i), 'MPI_Waitall')
  end do

  ! MPI_Iallgather and MPI_Ialltoall by MPI_Waitany, until none is active
  call MPI_Iallgather(c, n, MPI_INTEGER, g, n, MPI_INTEGER, MPI_COMM_WORLD, reqs(1))
  call MPI_Ialltoall(big, n, MPI_INTEGER, h, n, MPI_INTEGER, MPI_COMM_WORLD, reqs(2))
  seen = 0
  do
    call MPI_Waitany(2, reqs, idx, status)
    if (idx == MPI_UNDEFINED) exit
    checks = checks + 1
    if (idx < 1 .or. idx > 2) call fail('MPI_Waitany: its index')
    seen = seen + 1
  end do
  checks = checks + 1
  if (seen /= 2) call fail('MPI_Waitany: not two completions')
  call check(g, gathered(), 'MPI_Iallgather, MPI_Waitany')
  call check(h, exchanged(), 'MPI_Ialltoall, MPI_Waitany')

  ! MPI_Iscatter, MPI_Ireduce_scatter_block and MPI_Ibarrier by
  ! MPI_Waitsome, until none is active: each index once
  call MPI_Iscatter(big, n, MPI_INTEGER, a, n, MPI_INTEGER, 0, MPI_COMM_WORLD, reqs(1))
  call MPI_Ireduce_scatter_block(big, b, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, reqs(2))
  call MPI_Ibarrier(MPI_COMM_WORLD, reqs(3))
  seen = 0
  do
    call MPI_Waitsome(3, reqs, outcount, indices, statuses)
    if (outcount == MPI_UNDEFINED) exit
    do i = 1, outcount
      checks = checks + 1
      if (indices(i) < 1 .or. indices(i) > 3) call fail('MPI_Waitsome: an index')
      if (indices(i) >= 1 .and. indices(i) <= 3) seen = seen + 10 ** (indices(i) - 1)
    end do
  end do
  checks = checks + 1
  if (seen /= 111) call fail('MPI_Waitsome: not each request once')
  call check(a, [(w(0, rank * n + i), i = 1, n)], 'MPI_Iscatter, MPI_Waitsome')
  call check(b, scattered_sum(), 'MPI_Ireduce_scatter_block, MPI_Waitsome')

  ! MPI_Iallreduce in place with point-to-point, by MPI_Testall
  d = dble(mine(rank)) / 4d0
  call MPI_Iallreduce(MPI_IN_PLACE, d, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, reqs(1))
  call MPI_Irecv(b, n, MPI_INTEGER, right, 79, MPI_COMM_WORLD, reqs(2))
  call MPI_Isend(c, n, MPI_INTEGER, left, 79, MPI_COMM_WORLD, reqs(3))
  flag = .false.
  do while (.not. flag)
    call MPI_Testall(3, reqs, flag, MPI_STATUSES_IGNORE)
  end do
  checks = checks + 1
  if (any(d /= dexpect)) call fail('MPI_Iallreduce double precision sum in place, MPI_Testall')
  call check(b, mine(right), 'point-to-point beside a collective, MPI_Testall')
  do i = 1, 3
    call check_null(reqs(i), 'MPI_Testall')
  end do

  ! MPI_Ibcast and MPI_Iallgather by MPI_Testany, then MPI_Testsome
  a = mine(rank)
  call MPI_Ibcast(a, n, MPI_INTEGER, 0, MPI_COMM_WORLD, reqs(1))
  call MPI_Iallgather(c, n, MPI_INTEGER, h, n, MPI_INTEGER, MPI_COMM_WORLD, reqs(2))
  seen = 0
  do while (seen < 1)
    call MPI_Testany(2, reqs, idx, flag, status)
    if (flag .and. idx /= MPI_UNDEFINED) seen = seen + 1
  end do
  do while (seen < 2)
    call MPI_Testsome(2, reqs, outcount, indices, MPI_STATUSES_IGNORE)
    if (outcount /= MPI_UNDEFINED) seen = seen + outcount
  end do
  checks = checks + 1
  if (seen /= 2) call fail('MPI_Testany and MPI_Testsome: not two completions')
  call check(a, mine(0), 'MPI_Ibcast, MPI_Testany')
  call check(h, gathered(), 'MPI_Iallgather, MPI_Testsome')

  ! MPI_Ialltoall polled by MPI_Request_get_status, which does not free
  ! it, then freed by MPI_Wait
  call MPI_Ialltoall(big, n, MPI_INTEGER, h, n, MPI_INTEGER, MPI_COMM_WORLD, req)
  flag = .false.
  do while (.not. flag)
    call MPI_Request_get_status(req, flag, status)
  end do
  checks = checks + 1
  if (req == MPI_REQUEST_NULL) call fail('MPI_Request_get_status freed the request')
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  call check(h, exchanged(), 'MPI_Ialltoall, MPI_Request_get_status')
  call check_null(req, 'MPI_Wait after MPI_Request_get_status')

  ! MPI_Request_free on a send, with a collective outstanding
  call MPI_Ibarrier(MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(c, n, MPI_INTEGER, right, 80, MPI_COMM_WORLD, req)
  call MPI_Request_free(req)
  call check_null(req, 'MPI_Request_free')
  call MPI_Recv(b, n, MPI_INTEGER, left, 80, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
  call MPI_Wait(reqs(1), MPI_STATUS_IGNORE)
  call check(b, mine(left), 'a freed send''s message')

  ! ---- persistent (MPIX_*_init, from mpi_f08_ext: Open MPI's name for
  ! MPI-4's MPI_*_init), each started twice with new inputs (times s): by
  ! MPI_Startall and MPI_Waitall, then by MPI_Start and MPI_Wait one by one;
  ! the handles stay (inactive) until MPI_Request_free
  call MPIX_Reduce_init(c, a, n, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, MPI_INFO_NULL, preqs(1))
  call MPIX_Gather_init(c, n, MPI_INTEGER, g, n, MPI_INTEGER, 0, MPI_COMM_WORLD, MPI_INFO_NULL, preqs(2))
  call MPIX_Scatter_init(big, n, MPI_INTEGER, b, n, MPI_INTEGER, 0, MPI_COMM_WORLD, MPI_INFO_NULL, preqs(3))
  call MPIX_Allgather_init(c, n, MPI_INTEGER, h, n, MPI_INTEGER, MPI_COMM_WORLD, MPI_INFO_NULL, preqs(4))
  call MPIX_Reduce_scatter_block_init(big, e, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, preqs(5))
  do s = 1, 2
    c = s * mine(rank)
    big = [(s * w(rank, i), i = 1, n * nprocs)]
    if (s == 1) then
      call MPI_Startall(5, preqs)
      call MPI_Waitall(5, preqs, MPI_STATUSES_IGNORE)
    else
      do i = 1, 5
        call MPI_Start(preqs(i))
        call MPI_Wait(preqs(i), status)
      end do
    end if
    checks = checks + 1
    if (any(preqs == MPI_REQUEST_NULL)) call fail('persistent: a handle was freed')
    if (rank == 0) call check(a, s * total_of(), 'MPIX_Reduce_init sum')
    if (rank == 0) call check(g, s * gathered(), 'MPIX_Gather_init')
    call check(b, [(s * w(0, rank * n + i), i = 1, n)], 'MPIX_Scatter_init')
    call check(h, s * gathered(), 'MPIX_Allgather_init')
    call check(e, s * scattered_sum(), 'MPIX_Reduce_scatter_block_init')
  end do
  do i = 1, 5
    call MPI_Request_free(preqs(i))
    call check_null(preqs(i), 'MPI_Request_free of a persistent collective')
  end do

  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0 .and. total == 0) print '(a, i0, a)', 'fcheck08: ok (', checks, ' checks)'
  call MPI_Finalize()
  if (total /= 0) stop 1

contains

  ! Rank q's input, and its share of the arrays scattered and exchanged.
  function mine(q) result(x)
    integer, intent(in) :: q
    integer :: x(n), k
    x = [(mod(q * 7919 + k * 104729, 97) - 40, k = 1, n)]
  end function

  integer function w(q, k)
    integer, intent(in) :: q, k
    w = mod(q * 31 + k * 17, 1001)
  end function

  ! What the collectives must give, from every rank's inputs.
  function total_of() result(x)
    integer :: x(n), q
    x = 0
    do q = 0, nprocs - 1
      x = x + mine(q)
    end do
  end function

  function max_of() result(x)
    integer :: x(n), q
    x = mine(0)
    do q = 1, nprocs - 1
      x = max(x, mine(q))
    end do
  end function

  function gathered() result(x)
    integer :: x(n * nprocs), q
    do q = 0, nprocs - 1
      x(q * n + 1:(q + 1) * n) = mine(q)
    end do
  end function

  function exchanged() result(x)  ! block q: what rank q sends to this one
    integer :: x(n * nprocs), q, k
    do q = 0, nprocs - 1
      x(q * n + 1:(q + 1) * n) = [(w(q, rank * n + k), k = 1, n)]
    end do
  end function

  function scattered_sum() result(x)
    integer :: x(n), q, k
    x = 0
    do q = 0, nprocs - 1
      x = x + [(w(q, rank * n + k), k = 1, n)]
    end do
  end function

  subroutine fail(what)
    character(*), intent(in) :: what
    print '(a, i0, 2a)', 'fcheck08: rank ', rank, ': wrong: ', what
    failures = failures + 1
  end subroutine

  subroutine check(x, y, what)
    integer, intent(in) :: x(:), y(:)
    character(*), intent(in) :: what
    checks = checks + 1
    if (any(x /= y)) call fail(what)
  end subroutine

  subroutine check_null(r, what)
    type(MPI_Request), intent(in) :: r
    character(*), intent(in) :: what
    checks = checks + 1
    if (r /= MPI_REQUEST_NULL) call fail(what // ': the request is not MPI_REQUEST_NULL')
  end subroutine
end program fcheck08
