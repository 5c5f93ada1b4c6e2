! fcheck - an ordinary Fortran MPI program (mpif.h; it knows nothing of
! cadrt) that runs each blocking collective twice on the same inputs:
! through MPI_ (which libcadmpi.so takes over when preloaded) and through
! PMPI_ (always Open MPI's own), and requires identical results.  The
! program's main is Fortran, so MPI starts through the Fortran MPI_INIT.
!
!   mpif90 -fallow-argument-mismatch -o fcheck fcheck.f90   (mpif.h: gfortran >= 10)
!   mpirun -n P [-x LD_PRELOAD=libcadmpi.so] fcheck
!
! Prints "fcheck: ok (N checks)" at rank 0; exits 1 if a check failed.
program fcheck
  implicit none
  include 'mpif.h'
  integer, parameter :: n = 1000
  integer :: ierr, rank, nprocs, i, failures, total, checks, root
  integer :: ia(n), ib(n), isend(n), ipair(2, n), ipair_a(2, n), ipair_b(2, n)
  integer, allocatable :: iga(:), igb(:), ibig(:)
  double precision :: da(n), db(n), dsend(n)
  real :: ra(n), rb(n), rsend(n)

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  failures = 0
  checks = 0
  allocate(iga(n * nprocs), igb(n * nprocs), ibig(n * nprocs))

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
