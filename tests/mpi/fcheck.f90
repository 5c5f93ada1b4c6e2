! fcheck - an ordinary Fortran MPI program (mpif.h; it knows nothing of
! cadrt) that runs each collective, blocking and non-blocking, through
! MPI_ (which libcadmpi.so takes over when preloaded) and the blocking one
! through PMPI_ (always Open MPI's own) on the same inputs, and requires
! identical results.  The non-blocking ones are completed by each member
! of the MPI_WAIT family in turn, mixed with point-to-point requests, and
! the handles and statuses those return are checked; persistent ones
! (MPIX_*_INIT) are started twice.  The program's main is Fortran, so MPI
! starts through the Fortran MPI_INIT.
!
!   mpif90 -fallow-argument-mismatch -o fcheck fcheck.f90   (mpif.h: gfortran >= 10)
!   mpirun -n P [-x LD_PRELOAD=libcadmpi.so] fcheck [wait-invalid|start-invalid]
!
! Prints "fcheck: ok (N checks)" at rank 0; exits 1 if a check failed.
! With wait-invalid (start-invalid), it only calls MPI_WAIT (MPI_START) on
! a request handle that names no request, errors fatal: MPI must abort the
! job with MPI_ERR_REQUEST (Open MPI's own MPI_WAIT follows a null pointer
! instead).
program fcheck
  implicit none
  include 'mpif.h'
  integer, parameter :: n = 1000
  integer :: ierr, rank, nprocs, i, k, failures, total, checks, root
  integer :: ia(n), ib(n), isend(n), ipair(2, n), ipair_a(2, n), ipair_b(2, n)
  integer, allocatable :: iga(:), igb(:), ibig(:)
  double precision :: da(n), db(n), dsend(n)
  real :: ra(n), rb(n), rsend(n)
  integer :: req, reqs(4), status(MPI_STATUS_SIZE), statuses(MPI_STATUS_SIZE, 4)
  integer :: idx, outcount, indices(4), left, right, seen, ic(n), ipa(n), ipb(n)
  integer, allocatable :: igc(:), igd(:)
  logical :: flag
  character(16) :: mode

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  if (command_argument_count() > 0) then
    call get_command_argument(1, mode)
    req = 123456
    if (mode == 'start-invalid') then
      call MPI_START(req, ierr)
    else
      call MPI_WAIT(req, status, ierr)
    end if
    print '(3a, i0)', 'fcheck: ', trim(mode), ' returned ', ierr
    call MPI_FINALIZE(ierr)
    stop 2
  end if
  failures = 0
  checks = 0
  allocate(iga(n * nprocs), igb(n * nprocs), ibig(n * nprocs), igc(n * nprocs), igd(n * nprocs))
  left = mod(rank + nprocs - 1, nprocs)
  right = mod(rank + 1, nprocs)

  do i = 1, n
    isend(i) = mod(rank * 7919 + i * 104729, 97) - 40
    dsend(i) = dble(isend(i)) / 4d0
    rsend(i) = real(isend(i)) / 2.0
    ipair(1, i) = isend(i)
    ipair(2, i) = rank
  end do
  do i = 1, n * nprocs
    ibig(i) = mod(rank * 31 + i * 17, 1001)
  end do

  do root = 0, nprocs - 1, max(1, nprocs - 1)
    ! MPI_BCAST of INTEGER and DOUBLE PRECISION
    ia = isend
    ib = isend
    call MPI_BCAST(ia, n, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    call PMPI_BCAST(ib, n, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    call check_i(ia, ib, n, 'bcast integer')
    da = dsend
    db = dsend
    call MPI_BCAST(da, n, MPI_DOUBLE_PRECISION, root, MPI_COMM_WORLD, ierr)
    call PMPI_BCAST(db, n, MPI_DOUBLE_PRECISION, root, MPI_COMM_WORLD, ierr)
    call check_d(da, db, n, 'bcast double precision')

    ! MPI_REDUCE: only the root's result is defined
    ia = 0
    ib = 0
    call MPI_REDUCE(isend, ia, n, MPI_INTEGER, MPI_SUM, root, MPI_COMM_WORLD, ierr)
    call PMPI_REDUCE(isend, ib, n, MPI_INTEGER, MPI_SUM, root, MPI_COMM_WORLD, ierr)
    if (rank == root) call check_i(ia, ib, n, 'reduce integer sum')

    ! MPI_GATHER and MPI_SCATTER
    iga = 0
    igb = 0
    call MPI_GATHER(isend, n, MPI_INTEGER, iga, n, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    call PMPI_GATHER(isend, n, MPI_INTEGER, igb, n, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    if (rank == root) call check_i(iga, igb, n * nprocs, 'gather integer')
    ia = 0
    ib = 0
    call MPI_SCATTER(ibig, n, MPI_INTEGER, ia, n, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    call PMPI_SCATTER(ibig, n, MPI_INTEGER, ib, n, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    call check_i(ia, ib, n, 'scatter integer')
  end do

  ! MPI_ALLREDUCE: INTEGER max, DOUBLE PRECISION and REAL sums, in place
  call MPI_ALLREDUCE(isend, ia, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  call PMPI_ALLREDUCE(isend, ib, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  call check_i(ia, ib, n, 'allreduce integer max')
  call MPI_ALLREDUCE(dsend, da, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call PMPI_ALLREDUCE(dsend, db, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check_d(da, db, n, 'allreduce double precision sum')
  ra = rsend
  rb = rsend
  call MPI_ALLREDUCE(MPI_IN_PLACE, ra, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  call PMPI_ALLREDUCE(MPI_IN_PLACE, rb, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  checks = checks + 1
  if (any(ra /= rb)) call fail('allreduce real sum in place')
  call MPI_ALLREDUCE(ipair, ipair_a, n, MPI_2INTEGER, MPI_MINLOC, MPI_COMM_WORLD, ierr)
  call PMPI_ALLREDUCE(ipair, ipair_b, n, MPI_2INTEGER, MPI_MINLOC, MPI_COMM_WORLD, ierr)
  call check_i(ipair_a, ipair_b, 2 * n, 'allreduce 2integer minloc')

  ! MPI_ALLGATHER, MPI_ALLTOALL, MPI_REDUCE_SCATTER_BLOCK, MPI_BARRIER
  call MPI_ALLGATHER(isend, n, MPI_INTEGER, iga, n, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call PMPI_ALLGATHER(isend, n, MPI_INTEGER, igb, n, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check_i(iga, igb, n * nprocs, 'allgather integer')
  call MPI_ALLTOALL(ibig, n, MPI_INTEGER, iga, n, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call PMPI_ALLTOALL(ibig, n, MPI_INTEGER, igb, n, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check_i(iga, igb, n * nprocs, 'alltoall integer')
  call MPI_REDUCE_SCATTER_BLOCK(ibig, ia, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call PMPI_REDUCE_SCATTER_BLOCK(ibig, ib, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check_i(ia, ib, n, 'reduce_scatter_block integer')
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  checks = checks + 1
  if (ierr /= MPI_SUCCESS) call fail('barrier')

  ! ---- the non-blocking collectives, each set completed another way
  ! MPI_IBCAST by MPI_WAIT, with a status
  root = nprocs - 1
  ia = isend
  ib = isend
  call MPI_IBCAST(ia, n, MPI_INTEGER, root, MPI_COMM_WORLD, req, ierr)
  call MPI_WAIT(req, status, ierr)
  call PMPI_BCAST(ib, n, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
  call check_i(ia, ib, n, 'ibcast integer, mpi_wait')
  call check_null(req, 'mpi_wait')

  ! MPI_IALLREDUCE by MPI_TEST, MPI_STATUS_IGNORE
  call MPI_IALLREDUCE(dsend, da, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_TEST(req, flag, MPI_STATUS_IGNORE, ierr)
  end do
  call PMPI_ALLREDUCE(dsend, db, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check_d(da, db, n, 'iallreduce double precision, mpi_test')
  call check_null(req, 'mpi_test')

  ! MPI_IREDUCE and MPI_IGATHER with a ring of point-to-point messages,
  ! by MPI_WAITALL: the receive's status names its source and tag
  ia = 0
  iga = 0
  ipa = -1
  call MPI_IREDUCE(isend, ia, n, MPI_INTEGER, MPI_MAX, 0, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_IRECV(ipa, n, MPI_INTEGER, left, 77, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_IGATHER(isend, n, MPI_INTEGER, iga, n, MPI_INTEGER, 0, MPI_COMM_WORLD, reqs(3), ierr)
  call MPI_ISEND(isend, n, MPI_INTEGER, right, 77, MPI_COMM_WORLD, reqs(4), ierr)
  call MPI_WAITALL(4, reqs, statuses, ierr)
  ib = 0
  igb = 0
  call PMPI_REDUCE(isend, ib, n, MPI_INTEGER, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
  call PMPI_GATHER(isend, n, MPI_INTEGER, igb, n, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) call check_i(ia, ib, n, 'ireduce integer max, mpi_waitall')
  if (rank == 0) call check_i(iga, igb, n * nprocs, 'igather integer, mpi_waitall')
  call PMPI_SENDRECV(isend, n, MPI_INTEGER, right, 78, ipb, n, MPI_INTEGER, left, 78, MPI_COMM_WORLD, &
                     MPI_STATUS_IGNORE, ierr)
  call check_i(ipa, ipb, n, 'point-to-point beside collectives, mpi_waitall')
  checks = checks + 1
  if (statuses(MPI_SOURCE, 2) /= left .or. statuses(MPI_TAG, 2) /= 77) call fail('mpi_waitall: the receive''s status')
  do i = 1, 4
    call check_null(reqs(i), 'mpi_waitall')
  end do

  ! MPI_IALLGATHER and MPI_IALLTOALL by MPI_WAITANY, until none is active
  call MPI_IALLGATHER(isend, n, MPI_INTEGER, iga, n, MPI_INTEGER, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_IALLTOALL(ibig, n, MPI_INTEGER, igc, n, MPI_INTEGER, MPI_COMM_WORLD, reqs(2), ierr)
  seen = 0
  do
    call MPI_WAITANY(2, reqs, idx, status, ierr)
    if (idx == MPI_UNDEFINED) exit
    checks = checks + 1
    if (idx < 1 .or. idx > 2 .or. ierr /= MPI_SUCCESS) call fail('mpi_waitany: its index')
    seen = seen + 1
  end do
  checks = checks + 1
  if (seen /= 2) call fail('mpi_waitany: not two completions')
  call PMPI_ALLGATHER(isend, n, MPI_INTEGER, igb, n, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call PMPI_ALLTOALL(ibig, n, MPI_INTEGER, igd, n, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check_i(iga, igb, n * nprocs, 'iallgather integer, mpi_waitany')
  call check_i(igc, igd, n * nprocs, 'ialltoall integer, mpi_waitany')

  ! MPI_ISCATTER, MPI_IREDUCE_SCATTER_BLOCK and MPI_IBARRIER by
  ! MPI_WAITSOME, until none is active: each index once
  call MPI_ISCATTER(ibig, n, MPI_INTEGER, ia, n, MPI_INTEGER, 0, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_IREDUCE_SCATTER_BLOCK(ibig, ic, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_IBARRIER(MPI_COMM_WORLD, reqs(3), ierr)
  seen = 0
  do
    call MPI_WAITSOME(3, reqs, outcount, indices, statuses, ierr)
    if (outcount == MPI_UNDEFINED) exit
    do i = 1, outcount
      checks = checks + 1
      if (indices(i) < 1 .or. indices(i) > 3) call fail('mpi_waitsome: an index')
      if (indices(i) >= 1 .and. indices(i) <= 3) seen = seen + 10 ** (indices(i) - 1)
    end do
  end do
  checks = checks + 1
  if (seen /= 111) call fail('mpi_waitsome: not each request once')
  call PMPI_SCATTER(ibig, n, MPI_INTEGER, ib, n, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call PMPI_REDUCE_SCATTER_BLOCK(ibig, ipb, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check_i(ia, ib, n, 'iscatter integer, mpi_waitsome')
  call check_i(ic, ipb, n, 'ireduce_scatter_block integer, mpi_waitsome')

  ! MPI_IALLREDUCE in place with point-to-point, by MPI_TESTALL
  ra = rsend
  rb = rsend
  call MPI_IALLREDUCE(MPI_IN_PLACE, ra, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_IRECV(ipa, n, MPI_INTEGER, right, 79, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_ISEND(isend, n, MPI_INTEGER, left, 79, MPI_COMM_WORLD, reqs(3), ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_TESTALL(3, reqs, flag, MPI_STATUSES_IGNORE, ierr)
  end do
  call PMPI_ALLREDUCE(MPI_IN_PLACE, rb, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  checks = checks + 1
  if (any(ra /= rb)) call fail('iallreduce real sum in place, mpi_testall')
  do i = 1, 3
    call check_null(reqs(i), 'mpi_testall')
  end do

  ! MPI_IBCAST and MPI_IALLGATHER by MPI_TESTANY, then MPI_TESTSOME
  da = dsend
  db = dsend
  call MPI_IBCAST(da, n, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_IALLGATHER(isend, n, MPI_INTEGER, igc, n, MPI_INTEGER, MPI_COMM_WORLD, reqs(2), ierr)
  seen = 0
  do while (seen < 1)
    call MPI_TESTANY(2, reqs, idx, flag, status, ierr)
    if (flag .and. idx /= MPI_UNDEFINED) seen = seen + 1
  end do
  do while (seen < 2)
    call MPI_TESTSOME(2, reqs, outcount, indices, MPI_STATUSES_IGNORE, ierr)
    if (outcount /= MPI_UNDEFINED) seen = seen + outcount
  end do
  call PMPI_BCAST(db, n, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  call PMPI_ALLGATHER(isend, n, MPI_INTEGER, igd, n, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check_d(da, db, n, 'ibcast double precision, mpi_testany')
  call check_i(igc, igd, n * nprocs, 'iallgather integer, mpi_testsome')
  checks = checks + 1
  if (seen /= 2) call fail('mpi_testany and mpi_testsome: not two completions')

  ! MPI_IALLTOALL polled by MPI_REQUEST_GET_STATUS, which does not free
  ! it, then freed by MPI_WAIT
  call MPI_IALLTOALL(ibig, n, MPI_INTEGER, igc, n, MPI_INTEGER, MPI_COMM_WORLD, req, ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_REQUEST_GET_STATUS(req, flag, status, ierr)
  end do
  checks = checks + 1
  if (req == MPI_REQUEST_NULL) call fail('mpi_request_get_status freed the request')
  call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
  call PMPI_ALLTOALL(ibig, n, MPI_INTEGER, igd, n, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check_i(igc, igd, n * nprocs, 'ialltoall integer, mpi_request_get_status')
  call check_null(req, 'mpi_wait after mpi_request_get_status')

  ! MPI_REQUEST_FREE, on a send (Open MPI refuses to free an active
  ! collective's request: MPI_ERR_REQUEST), with a collective outstanding
  call MPI_IBARRIER(MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_ISEND(isend, n, MPI_INTEGER, right, 80, MPI_COMM_WORLD, req, ierr)
  call MPI_REQUEST_FREE(req, ierr)
  call PMPI_RECV(ipa, n, MPI_INTEGER, left, 80, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call MPI_WAIT(reqs(1), MPI_STATUS_IGNORE, ierr)
  checks = checks + 1
  if (any(ipa /= [(mod(left * 7919 + i * 104729, 97) - 40, i = 1, n)])) call fail('a freed send''s message')
  call check_null(req, 'mpi_request_free')

  ! ---- persistent collectives (MPIX_*_INIT: Open MPI's name for MPI-4's
  ! MPI_*_INIT), each started twice with new inputs: by MPI_START and
  ! MPI_WAIT one by one, then by MPI_STARTALL and MPI_WAITALL together;
  ! the handles stay (inactive) until MPI_REQUEST_FREE
  call MPIX_BCAST_INIT(ia, n, MPI_INTEGER, 0, MPI_COMM_WORLD, MPI_INFO_NULL, reqs(1), ierr)
  call MPIX_ALLREDUCE_INIT(dsend, da, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, reqs(2), ierr)
  call MPIX_ALLTOALL_INIT(ibig, n, MPI_INTEGER, iga, n, MPI_INTEGER, MPI_COMM_WORLD, MPI_INFO_NULL, reqs(3), ierr)
  call MPIX_BARRIER_INIT(MPI_COMM_WORLD, MPI_INFO_NULL, reqs(4), ierr)
  do k = 1, 2
    ia = isend + k * (rank + 1)
    dsend = dsend + k
    ibig = ibig + k
    if (k == 1) then
      do i = 1, 4
        call MPI_START(reqs(i), ierr)
        call MPI_WAIT(reqs(i), status, ierr)
      end do
    else
      call MPI_STARTALL(4, reqs, ierr)
      call MPI_WAITALL(4, reqs, statuses, ierr)
    end if
    checks = checks + 1
    if (ierr /= MPI_SUCCESS .or. any(reqs == MPI_REQUEST_NULL)) call fail('persistent: a handle was freed')
    ib = isend + k
    call PMPI_BCAST(ib, n, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    call check_i(ia, ib, n, 'persistent bcast integer')
    call PMPI_ALLREDUCE(dsend, db, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    call check_d(da, db, n, 'persistent allreduce double precision sum')
    call PMPI_ALLTOALL(ibig, n, MPI_INTEGER, igb, n, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    call check_i(iga, igb, n * nprocs, 'persistent alltoall integer')
  end do
  do i = 1, 4
    call MPI_REQUEST_FREE(reqs(i), ierr)
    call check_null(reqs(i), 'mpi_request_free of a persistent collective')
  end do

  ! Bad arguments to the MPI_WAIT family, with errors returned instead of
  ! fatal: a negative count and an invalid handle are MPI errors (no
  ! crash), and a collective outstanding meanwhile is not disturbed
  call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  ia = isend
  call MPI_IBCAST(ia, n, MPI_INTEGER, 0, MPI_COMM_WORLD, reqs(1), ierr)
  reqs(2) = MPI_REQUEST_NULL
  call MPI_WAITALL(-1, reqs, statuses, ierr)
  call check_error('mpi_waitall, count -1')
  call MPI_TESTALL(-1, reqs, flag, statuses, ierr)
  call check_error('mpi_testall, count -1')
  call MPI_WAITANY(-1, reqs, idx, status, ierr)
  call check_error('mpi_waitany, count -1')
  call MPI_TESTANY(-1, reqs, idx, flag, status, ierr)
  call check_error('mpi_testany, count -1')
  call MPI_WAITSOME(-1, reqs, outcount, indices, statuses, ierr)
  call check_error('mpi_waitsome, count -1')
  call MPI_TESTSOME(-1, reqs, outcount, indices, statuses, ierr)
  call check_error('mpi_testsome, count -1')
  reqs(2) = 123456
  call MPI_WAITALL(2, reqs, statuses, ierr)
  call check_error('mpi_waitall, an invalid request')
  call MPI_WAIT(reqs(1), status, ierr)
  ib = isend
  call PMPI_BCAST(ib, n, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call check_i(ia, ib, n, 'ibcast beside bad calls')
  call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL, ierr)

  call PMPI_ALLREDUCE(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. total == 0) print '(a, i0, a)', 'fcheck: ok (', checks, ' checks)'
  call MPI_FINALIZE(ierr)
  if (total /= 0) stop 1

contains

  subroutine fail(what)
    character(*), intent(in) :: what
    print '(a, i0, 2a)', 'fcheck: rank ', rank, ': differs from Open MPI: ', what
    failures = failures + 1
  end subroutine

  subroutine check_error(what)
    character(*), intent(in) :: what
    checks = checks + 1
    if (ierr == MPI_SUCCESS) call fail(what // ': no error')
  end subroutine

  subroutine check_null(r, what)
    integer, intent(in) :: r
    character(*), intent(in) :: what
    checks = checks + 1
    if (ierr /= MPI_SUCCESS .or. r /= MPI_REQUEST_NULL) call fail(what // ': the request is not MPI_REQUEST_NULL')
  end subroutine

  subroutine check_i(a, b, m, what)
    integer, intent(in) :: m, a(m), b(m)
    character(*), intent(in) :: what
    checks = checks + 1
    if (ierr /= MPI_SUCCESS .or. any(a /= b)) call fail(what)
  end subroutine

  subroutine check_d(a, b, m, what)
    integer, intent(in) :: m
    double precision, intent(in) :: a(m), b(m)
    character(*), intent(in) :: what
    checks = checks + 1
    if (ierr /= MPI_SUCCESS .or. any(a /= b)) call fail(what)
  end subroutine
end program fcheck
